"""Plays Home Assistant's dlna_dmr role against a UPnP/DLNA MediaRenderer, using async-upnp-client.

Run by a venv python that has async-upnp-client (see Tests/TonearmTestSupport/PythonUPnP.swift).
Prints ONE JSON object on stdout at the end (logs go to stderr); exits 0 when ok, 1 otherwise.

Discovery (one of):
  --search HOST:PORT     unicast M-SEARCH to HOST:PORT (source address: --source, default 127.0.0.1
                         for a loopback HOST, else the address the kernel would use to reach HOST)
  --multicast SOURCE_IP  multicast M-SEARCH from SOURCE_IP to 239.255.255.250:1900
  --location URL         no search: use this device description URL

Scenarios: discover (search + device description), full (discover + HA's play_media and the
transport, volume, mute, next-URI and stop steps), dms (a DLNA MediaServer as the source, below).
Every step done is named in "steps"; a step that fails is named in "failures" with the UPnP error.
Without --lenient the first failure ends the run (ok false); with --lenient the run goes on past
failing steps and ok is true when it reaches the end.

Scenario dms (--server URL, the MediaServer's description): the server is made with the same strict
UpnpFactory (non-strict only when strict parsing fails, said in "server"), recognised as a DmsDevice
(what HA's dlna_dms uses) and its ContentDirectory browsed (BrowseDirectChildren from ObjectID 0,
through the containers, at most --browse-limit objects). Every item is reported ("items": title,
res URLs and protocolInfo, and "didl": the server's own BrowseMetadata Result for it). With
--media-title A --next-title B (a title or a file name each), A and B are resolved as HA's
dlna_dms media source does (BrowseMetadata "*", the first streamable res) and played on the
renderer (discovery as above) as a gapless pair: HA's play_media order for A with the server's
DIDL-Lite as metadata (didl_lite.to_xml_string of the parsed item, as HA's dlna_dmr sends a
media_source's didl_metadata), then at once SetNextAVTransportURI for B; then the event
CurrentTrackURI=B, the event TransportState=STOPPED at B's natural end, and Stop. No pause, seek
or volume change: the samples must reach the output unchanged. Status at "playing", "next",
"ended" and "stopped" (--control).

Covers (full): --cover URL goes into the metadata as HA's meta_data {"album_art_uri": URL}. At
each status point the report then has what HA would show ("media_image_url": DmrDevice's
media_image_url), what the web remote serves for the current item ("web_art", with --web BASE:
GET BASE/art/ID) and what MPD's readpicture gives for the current song ("mpd_picture", with
--mpd): each as {status or error, type, size, sha256}.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import ipaddress
import json
import logging
import socket
import sys
import time
import traceback
from datetime import timedelta
from typing import Any, Callable, Sequence
from urllib.parse import unquote, urlparse

import aiohttp
from async_upnp_client.aiohttp import AiohttpNotifyServer, AiohttpRequester
from async_upnp_client.client import UpnpService, UpnpStateVariable
from async_upnp_client.client_factory import UpnpFactory
from async_upnp_client.exceptions import UpnpError
from async_upnp_client.profiles.dlna import DmrDevice, DmsDevice, TransportState
from async_upnp_client.search import async_search
from didl_lite import didl_lite

MEDIA_RENDERER = "urn:schemas-upnp-org:device:MediaRenderer:1"
AVT_ID = "urn:upnp-org:serviceId:AVTransport"
RC_ID = "urn:upnp-org:serviceId:RenderingControl"
# What Home Assistant's MEDIA_UPNP_CLASS_MAP gives for media_type "music".
MUSIC_TRACK = "object.item.audioItem.musicTrack"
# HA dlna_dms: DLNA_RESOLVE_FILTER ("*", all metadata when resolving) and STREAMABLE_PROTOCOLS.
DMS_RESOLVE_FILTER = "*"
STREAMABLE_PROTOCOLS = ("http-get", "rtsp-rtp-udp", "*")

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
            "states": {"playing": None, "next": None, "stopped": None},  # dms adds "ended"
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
        self.dms: DmsDevice | None = None
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

            song = await self.step(f"currentsong_{point}", currentsong)
            self.report.setdefault("currentsong", {})[point] = song
            if self.args.cover and song.get("file"):
                self.report.setdefault("mpd_picture", {})[point] = await self.step(
                    f"readpicture_{point}", lambda: self.read_picture(song["file"])
                )
        if self.args.cover:
            self.report.setdefault("media_image_url", {})[point] = self.dmr.media_image_url if self.dmr else None
            if self.args.web and result.get("current") is not None:
                self.report.setdefault("web_art", {})[point] = await self.step(
                    f"web_art_{point}", lambda: self.web_art(result["current"])
                )

    async def web_art(self, item: int) -> dict[str, Any]:
        """The web remote's /art/ID for a queue item, as the page loads it."""
        timeout = aiohttp.ClientTimeout(total=20)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            async with session.get(f"{self.args.web}/art/{item}") as response:
                body = await response.read()
                return {
                    "status": response.status,
                    "type": response.headers.get("Content-Type"),
                    "size": len(body),
                    "sha256": hashlib.sha256(body).hexdigest(),
                }

    async def read_picture(self, uri: str) -> dict[str, Any]:
        """MPD's readpicture for uri, chunk by chunk as a client asks (binary responses)."""
        reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(self.args.mpd), 5)
        try:
            await asyncio.wait_for(reader.readline(), 5)
            picture = b""
            kind = None
            while True:
                quoted = uri.replace("\\", "\\\\").replace('"', '\\"')
                writer.write(f'readpicture "{quoted}" {len(picture)}\n'.encode())
                await writer.drain()
                size = None
                while True:
                    line = (await asyncio.wait_for(reader.readline(), 20)).decode()
                    if line.startswith("ACK"):
                        return {"error": line.strip()}
                    if line == "OK\n":
                        return {"size": 0, "type": None, "sha256": None}
                    key, _, value = line.rstrip("\n").partition(": ")
                    if key == "size":
                        size = int(value)
                    elif key == "type":
                        kind = value
                    elif key == "binary":
                        picture += await asyncio.wait_for(reader.readexactly(int(value)), 20)
                        await asyncio.wait_for(reader.readline(), 5)  # the newline after the bytes
                        if (await asyncio.wait_for(reader.readline(), 5)) != b"OK\n":
                            raise StepFailed("readpicture: no OK after the binary chunk")
                        break
                if size is None or len(picture) >= size:
                    return {"size": len(picture), "type": kind, "sha256": hashlib.sha256(picture).hexdigest()}
        finally:
            writer.close()

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

    async def connect_renderer(self) -> DmrDevice:
        """HA's DlnaDmrEntity connection: a notify server, a DmrDevice, its subscriptions, a poll."""
        source_ip = self.args.source or local_ip_for(self.report["locations"][0])
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
        return dmr

    async def disconnect_renderer(self) -> None:
        assert self.dmr is not None and self.notify_server is not None
        await self.step("unsubscribe", self.dmr.async_unsubscribe_services)
        server, self.notify_server = self.notify_server, None
        await self.step("stop_notify_server", server.async_stop_server)

    async def full(self) -> None:
        args = self.args
        dmr = await self.connect_renderer()
        wait = args.event_timeout

        # Home Assistant's DlnaDmrEntity.async_play_media, media_type "music"; its extra metadata,
        # with --cover, the album art.
        async def metadata(url: str, title: str) -> str:
            return await dmr.construct_play_media_metadata(
                media_url=url,
                media_title=title,
                default_mime_type="audio/flac",
                default_upnp_class=MUSIC_TRACK,
                override_upnp_class=MUSIC_TRACK,
                meta_data={"album_art_uri": args.cover} if args.cover else {},
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
        await self.disconnect_renderer()

    # ---- the dms scenario: a DLNA MediaServer as the source ------------------------------------

    async def connect_server(self) -> DmsDevice:
        """The server as HA's dlna_dms connects to it: the factory, a DmsDevice, one update."""
        location = self.args.server
        info: dict[str, Any] = {"location": location, "strict": True, "strict_error": None}
        self.report["server"] = info
        self.current_step = "create_server_device"
        try:
            device = await UpnpFactory(self.requester, non_strict=False).async_create_device(location)
        except Exception as err:  # noqa: BLE001 - any strict parsing failure is reported, then non-strict
            info["strict"] = False
            info["strict_error"] = describe(err)
            LOG.warning("strict parsing of the server failed (%s): trying non_strict=True", info["strict_error"])
            try:
                device = await UpnpFactory(self.requester, non_strict=True).async_create_device(location)
            except Exception as err2:  # noqa: BLE001 - reported with the strict failure
                raise StepFailed(f"create_server_device: strict: {info['strict_error']}; non_strict: {describe(err2)}")
        self.done("create_server_device")
        info.update(
            device_type=device.device_type,
            friendly_name=device.friendly_name,
            manufacturer=device.manufacturer,
            model_name=device.model_name,
            model_number=device.model_number,
            udn=device.udn,
            services=[service.service_id for service in device.all_services],
            is_dms=DmsDevice.is_profile_device(device),
        )
        if not info["is_dms"]:
            raise StepFailed("DmsDevice.is_profile_device is false: not a MediaServer with CD and CM")
        dms = DmsDevice(device, event_handler=None)
        self.dms = dms
        cd = dms._service("CD")
        if cd is None or cd.action("Browse") is None:
            raise StepFailed(f"no ContentDirectory with Browse among {info['services']}")
        info["content_directory"] = {
            "service_type": cd.service_type,
            "service_id": cd.service_id,
            "control_url": cd.control_url,
            "actions": sorted(cd.actions),
        }
        await self.step("server_update", dms.async_update)
        info["sort_capabilities"] = dms.sort_capabilities
        info["search_capabilities"] = dms.search_capabilities
        info["system_update_id"] = dms.system_update_id
        return dms

    async def raw_metadata(self, object_id: str) -> str:
        """The server's own DIDL-Lite for one object: its BrowseMetadata Result, unparsed."""
        assert self.dms is not None
        action = self.dms._action("CD", "Browse")
        assert action is not None
        result = await action.async_call(
            ObjectID=object_id,
            BrowseFlag="BrowseMetadata",
            Filter=DMS_RESOLVE_FILTER,
            StartingIndex=0,
            RequestedCount=0,
            SortCriteria="",
        )
        return str(result["Result"])

    async def browse(self) -> list[dict[str, Any]]:
        """BrowseDirectChildren from "0" through every container, at most --browse-limit objects."""
        assert self.dms is not None
        dms = self.dms
        limit = self.args.browse_limit
        page = 50
        items: list[dict[str, Any]] = []
        containers: list[dict[str, Any]] = []
        queue = ["0"]
        seen = {"0"}
        count = 0
        calls = 0
        truncated = False
        while queue and not truncated:
            container_id = queue.pop(0)
            start = 0
            while True:
                if count >= limit:
                    truncated = True
                    break
                wanted = min(page, limit - count)
                self.current_step = f"browse {container_id!r} from {start}"
                result = await dms.async_browse_direct_children(
                    container_id, starting_index=start, requested_count=wanted
                )
                calls += 1
                for obj in result.result:
                    if not isinstance(obj, didl_lite.DidlObject):
                        continue  # a top-level desc
                    count += 1
                    if isinstance(obj, didl_lite.Container):
                        containers.append(
                            {"id": obj.id, "parent_id": obj.parent_id, "title": getattr(obj, "title", None),
                             "child_count": getattr(obj, "child_count", None)}
                        )
                        if obj.id not in seen:
                            seen.add(obj.id)
                            queue.append(obj.id)
                    else:
                        items.append(self.describe_item(obj))
                start += result.number_returned
                if result.number_returned == 0:
                    break
                if result.total_matches and start >= result.total_matches:
                    break
                if not result.total_matches and result.number_returned < wanted:
                    break  # TotalMatches 0 is "unknown" (ContentDirectory:1 2.7.4.2)
        self.report["browse"] = {
            "objects": count, "containers": containers, "items": len(items), "browse_calls": calls,
            "truncated": truncated or bool(queue),
        }
        self.done("browse")
        for item in items:
            self.current_step = f"raw_metadata {item['id']!r}"
            item["didl"] = await self.raw_metadata(item["id"])
        self.done("raw_metadata")
        self.report["items"] = items
        return items

    def describe_item(self, item: didl_lite.DidlObject) -> dict[str, Any]:
        assert self.dms is not None
        entry: dict[str, Any] = {
            "id": item.id,
            "parent_id": item.parent_id,
            "ref_id": getattr(item, "ref_id", None),
            "title": getattr(item, "title", None),
            "upnp_class": item.upnp_class,
            "res": [],
        }
        for res in item.res:
            fields = {"url": self.dms.get_absolute_url(res.uri) if res.uri else None, "uri": res.uri}
            for name in ("protocol_info", "size", "duration", "bitrate", "sample_frequency", "bits_per_sample",
                         "nr_audio_channels"):
                value = getattr(res, name, None)
                if value is not None:
                    fields[name] = value
            entry["res"].append(fields)
        return entry

    def find_item(self, items: list[dict[str, Any]], name: str) -> dict[str, Any]:
        """The item a title or a file name names (the same file may be under several containers)."""

        def names(item: dict[str, Any]) -> set[str]:
            known = {item["title"] or ""}
            for res in item["res"]:
                if res["url"]:
                    known.add(unquote(urlparse(res["url"]).path.rsplit("/", 1)[-1]))
            return known

        stem = name.rsplit(".", 1)[0] if "." in name else name
        matches = [item for item in items if name in names(item) or stem == item["title"]]
        if not matches:
            raise StepFailed(f"no item named {name!r} among {sorted({str(item['title']) for item in items})}")
        urls = {tuple(res["url"] for res in item["res"]) for item in matches}
        if len(urls) > 1:
            raise StepFailed(f"{name!r} names different resources: {[(m['id'], m['res']) for m in matches]}")
        return {"name": name, "id": matches[0]["id"], "matching_ids": [m["id"] for m in matches]}

    async def resolve(self, object_id: str) -> dict[str, Any]:
        """HA dlna_dms async_resolve_object, then what dlna_dmr async_play_media makes of it."""
        assert self.dms is not None
        item = await self.dms.async_browse_metadata(object_id, metadata_filter=DMS_RESOLVE_FILTER)
        for res in item.res:
            if not res.uri or not res.protocol_info:
                continue
            parts = res.protocol_info.split(":", 3)
            if len(parts) == 4 and parts[0].lower() in STREAMABLE_PROTOCOLS:
                return {
                    "id": item.id,
                    "title": item.title,
                    "url": self.dms.get_absolute_url(res.uri),
                    "protocol_info": res.protocol_info,
                    "mime_type": parts[2],
                    # HA: didl_lite.to_xml_string(sourced_media.didl_metadata).decode("utf-8")
                    "metadata": didl_lite.to_xml_string(item).decode("utf-8"),
                }
        raise StepFailed(f"object {object_id!r} has no playable resource: {item.res!r}")

    async def dms_scenario(self) -> None:
        args = self.args
        await self.connect_server()
        items = await self.browse()
        if not args.media_title:
            return

        chosen = {}
        for key, name in (("media", args.media_title), ("next", args.next_title)):
            found = await self.step(f"find_{key}", lambda: self.find_item(items, name))
            resolved = await self.step(f"resolve_{key}", lambda: self.resolve(found["id"])) if found else None
            if found and resolved:
                chosen[key] = {**found, **resolved}
        self.report["played"] = chosen
        if len(chosen) < 2:
            raise StepFailed("the two items to play were not both resolved")
        first, second = chosen["media"], chosen["next"]
        if first["url"] == second["url"]:
            raise StepFailed(f"{args.media_title!r} and {args.next_title!r} are the same resource {first['url']}")

        await self.discover()
        dmr = await self.connect_renderer()
        wait = args.event_timeout

        # Home Assistant's DlnaDmrEntity.async_play_media for a media_source item with didl_metadata.
        if dmr.can_stop:
            await self.step("stop_before_cast", dmr.async_stop)
        mark = len(self.events)
        t_set = time.monotonic() - START
        await self.step(
            "set_transport_uri", lambda: dmr.async_set_transport_uri(first["url"], first["title"], first["metadata"])
        )
        if dmr.transport_state == TransportState.PLAYING:
            self.done("play_skipped_already_playing")  # HA returns here without Play
        else:
            await self.step("wait_for_can_play", dmr.async_wait_for_can_play)

            async def play() -> None:
                if not dmr.can_play:
                    raise StepFailed(
                        f"can_play is false after async_wait_for_can_play (TransportState="
                        f"{dmr.transport_state and dmr.transport_state.value}, CurrentTransportActions="
                        f"{dmr._current_transport_actions or 'unknown'}): async_play would silently do nothing"
                    )
                await dmr.async_play()

            await self.step("play", play)
        t_play = time.monotonic() - START

        async def set_next() -> None:
            if not dmr.has_next_transport_uri:
                raise StepFailed("has_next_transport_uri is false (needs SetNextAVTransportURI and NextAVTransportURI)")
            await dmr.async_set_next_transport_uri(second["url"], second["title"], second["metadata"])

        await self.step("set_next_transport_uri", set_next)
        t_next_set = time.monotonic() - START
        playing = await self.step(
            "event_playing",
            lambda: self.wait_event(mark, "TransportState=PLAYING", self.avt("TransportState", lambda v: v == "PLAYING"), wait),
        )
        await self.control_status("playing")

        switched = await self.step(
            "event_next_track",
            lambda: self.wait_event(
                mark, f"CurrentTrackURI={second['url']}", self.avt("CurrentTrackURI", lambda v: v == second["url"]),
                args.next_timeout,
            ),
        )
        await self.control_status("next")

        since = next((i for i, e in enumerate(self.events) if e is switched), len(self.events))
        ended_states = ("STOPPED", "NO_MEDIA_PRESENT")

        async def natural_end() -> dict[str, Any]:
            entry = await self.wait_event(
                since, "TransportState=STOPPED", self.avt("TransportState", lambda v: v in ended_states),
                args.end_timeout,
            )
            if entry["vars"]["TransportState"] != "STOPPED":
                raise StepFailed(f"the cast ended as {entry['vars']['TransportState']} at B's end, not STOPPED: {entry}")
            return entry

        ended = await self.step("event_stopped_at_end", natural_end)
        await self.control_status("ended")

        errors = [e for e in self.events if e["service"] == AVT_ID and e["vars"].get("TransportStatus") == "ERROR_OCCURRED"]

        async def no_error() -> None:
            if errors:
                raise StepFailed(f"TransportStatus ERROR_OCCURRED in {errors}")

        await self.step("no_transport_error", no_error)
        self.report["timing"] = {
            "set_transport_uri_at": round(t_set, 3),
            "play_returned_at": round(t_play, 3),
            "set_next_returned_at": round(t_next_set, 3),
            "event_playing_at": playing and playing["t"],
            "event_next_track_at": switched and switched["t"],
            "event_stopped_at": ended and ended["t"],
            "first_seconds_by_events": playing and switched and round(switched["t"] - playing["t"], 3),
            "next_seconds_by_events": switched and ended and round(ended["t"] - switched["t"], 3),
        }

        mark = len(self.events)

        async def stop() -> None:
            if not dmr.can_stop:
                raise StepFailed(
                    f"can_stop is false after the end (CurrentTransportActions={dmr._current_transport_actions or 'unknown'}):"
                    " async_stop would silently do nothing"
                )
            await dmr.async_stop()

        await self.step("stop", stop)
        await self.step(
            "event_no_media_after_stop",
            lambda: self.wait_event(
                mark, "TransportState=NO_MEDIA_PRESENT", self.avt("TransportState", lambda v: v == "NO_MEDIA_PRESENT"), wait
            ),
        )
        await self.control_status("stopped")
        await self.disconnect_renderer()

    async def run(self) -> None:
        if self.args.scenario == "dms":
            await self.dms_scenario()
        else:
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
    host = urlparse(url).hostname or "127.0.0.1"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect((host, 9))
        return sock.getsockname()[0]


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--search", metavar="HOST:PORT", help="unicast M-SEARCH to this address")
    where.add_argument("--multicast", metavar="SOURCE_IP", help="multicast M-SEARCH from this interface address")
    where.add_argument("--location", metavar="URL", help="device description URL (no search)")
    parser.add_argument("--source", metavar="IP", help="local address for the search socket and the notify server")
    parser.add_argument("--media", help="first URL to cast (scenario full)")
    parser.add_argument("--next", help="second URL, for SetNextAVTransportURI")
    parser.add_argument("--title", default="Tonearm test")
    parser.add_argument("--cover", metavar="URL", help="full: the album art URI sent in the metadata")
    parser.add_argument("--web", metavar="BASE", help="the web remote's base URL: /art/ID at each status point")
    parser.add_argument("--next-title", help="full: the next URL's title; dms: the item to play after --media-title")
    parser.add_argument("--server", metavar="LOCATION", help="MediaServer description URL (scenario dms)")
    parser.add_argument("--media-title", help="dms: the item to play first (its title or file name)")
    parser.add_argument("--browse-limit", type=int, default=200, help="dms: at most this many objects browsed")
    parser.add_argument("--end-timeout", type=float, default=30, help="dms: seconds to wait for the natural end")
    parser.add_argument("--control", metavar="SOCKETPATH", help="daemon control socket (JSON-RPC 2.0 lines)")
    parser.add_argument("--mpd", metavar="SOCKETPATH", help="daemon MPD socket: currentsong at each status point")
    parser.add_argument("--scenario", default="full", choices=["discover", "full", "dms"])
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
    if args.scenario == "dms":
        if not args.server:
            parser.error("--server is needed for scenario dms")
        if bool(args.media_title) != bool(args.next_title):
            parser.error("scenario dms plays --media-title and --next-title together: give both or neither")
    needs_renderer = args.scenario != "dms" or args.media_title
    if needs_renderer and not (args.search or args.multicast or args.location):
        parser.error("one of --search, --multicast or --location is needed")
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
