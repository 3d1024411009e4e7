"""Plays Home Assistant's dlna_dmr role against a UPnP/DLNA MediaRenderer, using async-upnp-client.

Run by a venv python that has async-upnp-client (see Tests/TonearmTestSupport/PythonUPnP.swift).
Prints ONE JSON object on stdout at the end (logs go to stderr); exits 0 when ok, 1 otherwise.

Discovery (one of):
  --search HOST:PORT     unicast M-SEARCH to HOST:PORT (source address: --source, default 127.0.0.1
                         for a loopback HOST, else the address the kernel would use to reach HOST)
  --multicast SOURCE_IP  multicast M-SEARCH from SOURCE_IP to 239.255.255.250:1900
  --location URL         no search: use this device description URL

Scenarios: discover (search + device description), full (discover + HA's play_media and the
transport, volume, mute, next-URI and stop steps). Every step done is named in "steps"; a step that
fails is named in "failures" with the UPnP error. Without --lenient the first failure ends the run
(ok false); with --lenient the run goes on past failing steps and ok is true when it reaches the end.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import logging
import socket
import sys
import time
import traceback
from datetime import timedelta
from typing import Any, Callable, Sequence

from async_upnp_client.aiohttp import AiohttpNotifyServer, AiohttpRequester
from async_upnp_client.client import UpnpService, UpnpStateVariable
from async_upnp_client.client_factory import UpnpFactory
from async_upnp_client.exceptions import UpnpError
from async_upnp_client.profiles.dlna import DmrDevice, TransportState
from async_upnp_client.search import async_search

MEDIA_RENDERER = "urn:schemas-upnp-org:device:MediaRenderer:1"
AVT_ID = "urn:upnp-org:serviceId:AVTransport"
RC_ID = "urn:upnp-org:serviceId:RenderingControl"
# What Home Assistant's MEDIA_UPNP_CLASS_MAP gives for media_type "music".
MUSIC_TRACK = "object.item.audioItem.musicTrack"

START = time.monotonic()
LOG = logging.getLogger("upnp_control_point")


class StepFailed(Exception):
    """A step did not do what it should (the message says what happened)."""


def jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, timedelta):
        return value.total_seconds()
    return str(value)


def describe(err: BaseException) -> str:
    text = str(err) or repr(err)
    return f"{type(err).__name__}: {text}"


class Run:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.report: dict[str, Any] = {
            "ok": False,
            "error": None,
            "scenario": args.scenario,
            "locations": [],
            "ssdp": None,
            "is_dmr": None,
            "device_type": None,
            "friendly_name": None,
            "udn": None,
            "services": [],
            "events": [],
            "states": {"playing": None, "next": None, "stopped": None},
            "position_after_seek": None,
            "steps": [],
            "failures": [],
        }
        self.current_step: str | None = None
        self.new_event = asyncio.Event()
        self.rpc_id = 0
        self.requester = AiohttpRequester(timeout=5)
        self.notify_server: AiohttpNotifyServer | None = None
        self.dmr: DmrDevice | None = None
        self.device: Any = None

    # ---- bookkeeping -------------------------------------------------------------------------

    @property
    def events(self) -> list[dict[str, Any]]:
        return self.report["events"]

    def done(self, name: str) -> None:
        LOG.info("step done: %s", name)
        self.report["steps"].append(name)

    def failed(self, name: str, err: BaseException) -> None:
        message = describe(err) if not isinstance(err, StepFailed) else str(err)
        LOG.warning("step failed: %s: %s", name, message)
        self.report["failures"].append({"step": name, "error": message})
        if not self.args.lenient:
            raise StepFailed(f"{name}: {message}")

    async def step(self, name: str, action: Callable[[], Any]) -> Any:
        """Runs one step; a failure ends the run unless --lenient (then None is returned)."""
        self.current_step = name
        try:
            result = action()
            if asyncio.iscoroutine(result):
                result = await result
        except (UpnpError, StepFailed, OSError, asyncio.TimeoutError, ValueError, KeyError) as err:
            self.failed(name, err)
            return None
        self.done(name)
        return result

    def on_event(self, service: UpnpService, state_variables: Sequence[UpnpStateVariable]) -> None:
        values: dict[str, Any] = {}
        for var in state_variables:
            if var.name == "LastChange" and not self.args.raw_last_change:
                continue
            values[var.name] = jsonable(var.value)
        if state_variables and not values:
            return  # only the raw LastChange, whose contents came as their own event just before
        entry = {"t": round(time.monotonic() - START, 3), "service": service.service_id, "vars": values}
        LOG.debug("event %s", entry)
        self.events.append(entry)
        self.new_event.set()

    async def wait_event(
        self, since: int, what: str, predicate: Callable[[dict[str, Any]], bool], timeout: float
    ) -> dict[str, Any]:
        """Waits until an event recorded at index >= since satisfies predicate."""
        deadline = time.monotonic() + timeout
        while True:
            for entry in self.events[since:]:
                if predicate(entry):
                    return entry
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                polled = await self.polled_state()
                raise StepFailed(f"no event with {what} within {timeout:g} s (then polled: {polled})")
            self.new_event.clear()
            try:
                await asyncio.wait_for(self.new_event.wait(), remaining)
            except asyncio.TimeoutError:
                pass

    async def polled_state(self) -> str:
        """For error messages: what the renderer says when asked."""
        assert self.dmr is not None
        try:
            await asyncio.wait_for(self.dmr.async_update(), 5)
        except (UpnpError, asyncio.TimeoutError) as err:
            return f"async_update failed: {describe(err)}"
        dmr = self.dmr
        return (
            f"TransportState={dmr.transport_state and dmr.transport_state.value} "
            f"CurrentTrackURI={dmr.current_track_uri} Volume={dmr.volume_level} Muted={dmr.is_volume_muted}"
        )

    @staticmethod
    def avt(var: str, accept: Callable[[Any], bool]) -> Callable[[dict[str, Any]], bool]:
        return lambda e: e["service"] == AVT_ID and var in e["vars"] and accept(e["vars"][var])

    @staticmethod
    def rc(var: str, accept: Callable[[Any], bool]) -> Callable[[dict[str, Any]], bool]:
        return lambda e: e["service"] == RC_ID and var in e["vars"] and accept(e["vars"][var])

    async def control_status(self, point: str) -> None:
        """Asks the daemon's control socket for status and records it at point."""
        if not self.args.control:
            return

        async def ask() -> Any:
            reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(self.args.control), 5)
            try:
                self.rpc_id += 1
                request = {"jsonrpc": "2.0", "id": self.rpc_id, "method": "status"}
                writer.write((json.dumps(request) + "\n").encode())
                await writer.drain()
                line = await asyncio.wait_for(reader.readline(), 5)
            finally:
                writer.close()
            if not line:
                raise StepFailed("control socket closed without an answer")
            answer = json.loads(line)
            if "result" not in answer:
                raise StepFailed(f"control socket answered without result: {answer}")
            return answer["result"]

        result = await self.step(f"status_{point}", ask)
        self.report["states"][point] = result
        if self.args.mpd:

            async def currentsong() -> Any:
                reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(self.args.mpd), 5)
                try:
                    greeting = await asyncio.wait_for(reader.readline(), 5)
                    if not greeting.startswith(b"OK MPD"):
                        raise StepFailed(f"MPD socket greeted with {greeting!r}")
                    writer.write(b"currentsong\n")
                    await writer.drain()
                    song: dict[str, str] = {}
                    while True:
                        line = (await asyncio.wait_for(reader.readline(), 5)).decode()
                        if not line or line == "OK\n" or line.startswith("ACK"):
                            break
                        key, _, value = line.rstrip("\n").partition(": ")
                        song[key] = value
                    return song
                finally:
                    writer.close()

            self.report.setdefault("currentsong", {})[point] = await self.step(f"currentsong_{point}", currentsong)

    # ---- discovery ---------------------------------------------------------------------------

    async def discover(self) -> None:
        args = self.args
        location = args.location
        if not location:
            responses: list[Any] = []

            async def on_response(headers: Any) -> None:
                responses.append(headers)

            if args.search:
                host, _, port = args.search.rpartition(":")
                host = host.strip("[]")
                source_ip = args.source or default_source(host)
                search_args = {"source": (source_ip, 0), "target": (host, int(port))}
            else:
                search_args = {"source": (args.multicast, 0)}
            LOG.info("searching %s", search_args)
            await async_search(on_response, timeout=args.search_time, search_target=MEDIA_RENDERER, **search_args)
            for headers in responses:
                loc = headers.get("location")
                if loc and loc not in self.report["locations"]:
                    self.report["locations"].append(loc)
            if not responses:
                raise StepFailed(f"no SSDP response to M-SEARCH ST={MEDIA_RENDERER} within {args.search_time} s")
            self.report["ssdp"] = jsonable(responses[0].as_dict())
            if not self.report["locations"]:
                raise StepFailed("SSDP responses carried no LOCATION")
            location = self.report["locations"][0]
            self.done("search")
        else:
            self.report["locations"] = [location]

        factory = UpnpFactory(self.requester, non_strict=False)
        self.current_step = "create_device"
        device = await factory.async_create_device(location)
        self.device = device
        self.report["is_dmr"] = DmrDevice.is_profile_device(device)
        self.report["device_type"] = device.device_type
        self.report["friendly_name"] = device.friendly_name
        self.report["udn"] = device.udn
        self.report["services"] = [service.service_id for service in device.all_services]
        self.done("create_device")
        if not self.report["is_dmr"]:
            raise StepFailed("DmrDevice.is_profile_device is false: not a MediaRenderer with AVT, CM and RC")

    # ---- the full scenario --------------------------------------------------------------------

    async def full(self) -> None:
        args = self.args
        source_ip = args.source or local_ip_for(self.report["locations"][0])
        self.notify_server = AiohttpNotifyServer(self.requester, source=(source_ip, 0))
        await self.notify_server.async_start_server()
        self.report["callback_url"] = self.notify_server.callback_url
        self.done("notify_server")

        dmr = DmrDevice(self.device, self.notify_server.event_handler)
        self.dmr = dmr
        dmr.on_event = self.on_event
        await self.step("subscribe", lambda: dmr.async_subscribe_services(auto_resubscribe=True))
        await self.step("update", dmr.async_update)
        self.report["capabilities"] = capabilities(dmr)
        wait = args.event_timeout

        # Home Assistant's DlnaDmrEntity.async_play_media, media_type "music", no extra metadata.
        async def metadata(url: str, title: str) -> str:
            return await dmr.construct_play_media_metadata(
                media_url=url,
                media_title=title,
                default_mime_type="audio/flac",
                default_upnp_class=MUSIC_TRACK,
                override_upnp_class=MUSIC_TRACK,
                meta_data={},
            )

        didl = await self.step("construct_metadata", lambda: metadata(args.media, args.title))
        self.report["metadata"] = didl
        if dmr.can_stop:
            await self.step("stop_before_cast", dmr.async_stop)
        mark = len(self.events)
        await self.step("set_transport_uri", lambda: dmr.async_set_transport_uri(args.media, args.title, didl))
        if dmr.transport_state == TransportState.PLAYING:
            self.done("play_skipped_already_playing")  # HA returns here without Play
        else:
            await self.step("wait_for_can_play", dmr.async_wait_for_can_play)
            await self.step("play", dmr.async_play)
        await self.step(
            "event_playing",
            lambda: self.wait_event(mark, "TransportState=PLAYING", self.avt("TransportState", lambda v: v == "PLAYING"), wait),
        )
        await self.control_status("playing")

        mark = len(self.events)

        async def pause() -> None:
            if not dmr.can_pause:
                raise StepFailed(
                    f"can_pause is false (CurrentTransportActions={dmr._current_transport_actions or 'unknown'}):"
                    " async_pause would silently do nothing"
                )
            await dmr.async_pause()

        await self.step("pause", pause)
        await self.step(
            "event_paused",
            lambda: self.wait_event(
                mark, "TransportState=PAUSED_PLAYBACK", self.avt("TransportState", lambda v: v == "PAUSED_PLAYBACK"), wait
            ),
        )

        async def seek() -> None:
            if not dmr.can_seek_rel_time:
                raise StepFailed(
                    "can_seek_rel_time is false (needs Seek, A_ARG_TYPE_SeekMode allowing REL_TIME and 'Seek' in"
                    f" CurrentTransportActions={dmr._current_transport_actions or 'unknown'})"
                )
            await dmr.async_seek_rel_time(timedelta(seconds=1))

        await self.step("seek", seek)

        async def position() -> None:
            await dmr.async_update()
            var = dmr._state_variable("AVT", "RelativeTimePosition")
            self.report["position_raw"] = var.value if var else None
            pos = dmr.media_position
            self.report["position_after_seek"] = float(pos) if pos is not None else None
            if pos is None:
                raise StepFailed(f"no media_position after seek (RelativeTimePosition={self.report['position_raw']!r})")

        await self.step("position_after_seek", position)

        # A renderer events only changes: when the value is already the target, no event is due.
        expected_volume = desired_level(dmr, "Volume", 0.3)
        unchanged = rc_value(dmr, "Volume") == expected_volume
        mark = len(self.events)
        await self.step("set_volume", lambda: dmr.async_set_volume_level(0.3))
        if unchanged:
            self.done("event_volume_unchanged")
        else:
            await self.step(
                "event_volume",
                lambda: self.wait_event(
                    mark, f"Volume={expected_volume}", self.rc("Volume", lambda v: v == expected_volume), wait
                ),
            )
        self.report["volume_level"] = dmr.volume_level

        for muted in (True, False):
            name = "mute" if muted else "unmute"
            unchanged = rc_value(dmr, "Mute") is muted
            mark = len(self.events)
            await self.step(name, lambda: dmr.async_mute_volume(muted))
            if unchanged:
                self.done(f"event_{name}_unchanged")
                continue
            await self.step(
                f"event_{name}",
                lambda: self.wait_event(mark, f"Mute={muted}", self.rc("Mute", lambda v: v is muted), wait),
            )

        mark = len(self.events)
        await self.step("play_again", dmr.async_play)
        await self.step(
            "event_playing_again",
            lambda: self.wait_event(mark, "TransportState=PLAYING", self.avt("TransportState", lambda v: v == "PLAYING"), wait),
        )

        if args.next:
            title = args.next_title or args.title + " (next)"
            next_didl = await self.step("construct_next_metadata", lambda: metadata(args.next, title))
            mark = len(self.events)

            async def set_next() -> None:
                if not dmr.has_next_transport_uri:
                    raise StepFailed("has_next_transport_uri is false (needs SetNextAVTransportURI and NextAVTransportURI)")
                await dmr.async_set_next_transport_uri(args.next, title, next_didl)

            await self.step("set_next_transport_uri", set_next)
            await self.step(
                "event_next_track",
                lambda: self.wait_event(
                    mark, f"CurrentTrackURI={args.next}", self.avt("CurrentTrackURI", lambda v: v == args.next), args.next_timeout
                ),
            )
            await self.control_status("next")

        mark = len(self.events)
        stopped = ("STOPPED", "NO_MEDIA_PRESENT")
        already = dmr.transport_state is not None and dmr.transport_state.value in stopped
        await self.step("stop", dmr.async_stop)
        if already:
            self.done("event_stopped_already")  # the next track had ended before Stop
        else:
            await self.step(
                "event_stopped",
                lambda: self.wait_event(mark, "TransportState=STOPPED|NO_MEDIA_PRESENT", self.avt("TransportState", lambda v: v in stopped), wait),
            )
        await self.control_status("stopped")

        await self.step("unsubscribe", dmr.async_unsubscribe_services)
        server, self.notify_server = self.notify_server, None
        await self.step("stop_notify_server", server.async_stop_server)

    async def run(self) -> None:
        await self.discover()
        if self.args.scenario == "full":
            await self.full()
        self.report["ok"] = True

    async def cleanup(self) -> None:
        """Leaves no subscription or server behind (bounded, errors ignored)."""
        if self.notify_server is not None:
            server, self.notify_server = self.notify_server, None
            try:
                if self.dmr is not None:
                    await asyncio.wait_for(self.dmr.async_unsubscribe_services(), 5)
            except BaseException as err:  # noqa: BLE001 - cleanup only
                LOG.debug("cleanup unsubscribe: %r", err)
            try:
                await asyncio.wait_for(server.async_stop_server(), 5)
            except BaseException as err:  # noqa: BLE001 - cleanup only
                LOG.debug("cleanup notify server: %r", err)


def desired_level(dmr: DmrDevice, var_name: str, level: float) -> int | None:
    """The integer async_set_volume_level sends (min + level * (max - min), 0..100 when no range)."""
    action = dmr._action("RC", f"Set{var_name}")
    argument = action.argument(f"Desired{var_name}") if action else None
    if argument is None:
        return None
    var = argument.related_state_variable
    low = var.min_value or 0
    high = var.max_value or 100
    return int(low + level * (high - low))


def rc_value(dmr: DmrDevice, var_name: str) -> Any:
    var = dmr._state_variable("RC", var_name)
    return var.value if var is not None else None


def capabilities(dmr: DmrDevice) -> dict[str, Any]:
    names = [
        "has_volume_level", "has_volume_mute", "has_play_media", "has_next_transport_uri", "has_pause", "has_play",
        "has_stop", "has_next", "has_previous", "has_seek_rel_time", "has_seek_abs_time", "has_get_protocol_info",
        "can_play", "can_pause", "can_stop", "can_seek_rel_time", "can_next", "can_previous", "has_play_mode",
    ]
    caps = {name: bool(getattr(dmr, name)) for name in names}
    caps["transport_state"] = dmr.transport_state.value if dmr.transport_state else None
    caps["current_transport_actions"] = sorted(dmr._current_transport_actions)
    caps["volume_level"] = dmr.volume_level
    caps["is_volume_muted"] = dmr.is_volume_muted
    caps["sink_protocol_info"] = dmr.sink_protocol_info
    return caps


def default_source(host: str) -> str:
    ip = ipaddress.ip_address(host)
    if ip.is_loopback:
        return "127.0.0.1"
    return local_ip_for(f"http://{host}:1900/")


def local_ip_for(url: str) -> str:
    """The local address the kernel uses to reach url's host (what HA's async_get_local_ip does)."""
    from urllib.parse import urlparse

    host = urlparse(url).hostname or "127.0.0.1"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect((host, 9))
        return sock.getsockname()[0]


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--search", metavar="HOST:PORT", help="unicast M-SEARCH to this address")
    where.add_argument("--multicast", metavar="SOURCE_IP", help="multicast M-SEARCH from this interface address")
    where.add_argument("--location", metavar="URL", help="device description URL (no search)")
    parser.add_argument("--source", metavar="IP", help="local address for the search socket and the notify server")
    parser.add_argument("--media", help="first URL to cast (scenario full)")
    parser.add_argument("--next", help="second URL, for SetNextAVTransportURI")
    parser.add_argument("--title", default="Tonearm test")
    parser.add_argument("--next-title")
    parser.add_argument("--control", metavar="SOCKETPATH", help="daemon control socket (JSON-RPC 2.0 lines)")
    parser.add_argument("--mpd", metavar="SOCKETPATH", help="daemon MPD socket: currentsong at each status point")
    parser.add_argument("--scenario", default="full", choices=["discover", "full"])
    parser.add_argument("--timeout", type=float, default=60, help="overall bound in seconds")
    parser.add_argument("--search-time", type=int, default=2, help="seconds to collect SSDP responses")
    parser.add_argument("--event-timeout", type=float, default=10, help="seconds to wait for each awaited event")
    parser.add_argument("--next-timeout", type=float, default=30, help="seconds to wait for the next track to start")
    parser.add_argument("--lenient", action="store_true", help="go on past failing steps (for reference renderers)")
    parser.add_argument("--raw-last-change", action="store_true", help="also record raw LastChange values")
    parser.add_argument("--verbose", "-v", action="count", default=0)
    args = parser.parse_args(argv)
    if args.scenario == "full" and not args.media:
        parser.error("--media is needed for scenario full")
    return args


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    run = Run(args)
    try:
        await asyncio.wait_for(run.run(), args.timeout)
    except asyncio.TimeoutError:
        run.report["error"] = f"timed out after {args.timeout:g} s (during step {run.current_step})"
    except StepFailed as err:
        run.report["error"] = str(err)
    except Exception as err:  # noqa: BLE001 - everything ends in the report
        LOG.debug("%s", traceback.format_exc())
        run.report["error"] = f"{run.current_step or 'start'}: {describe(err)}"
    finally:
        await run.cleanup()
    if run.report["error"]:
        run.report["ok"] = False
    run.report["elapsed"] = round(time.monotonic() - START, 3)
    return run.report


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if args.verbose > 1 else logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    report = asyncio.run(main_async(args))
    print(json.dumps(report, default=str), flush=True)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
