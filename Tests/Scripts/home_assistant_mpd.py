"""Drives Tonearm's MPD socket the way Home Assistant's MPD integration does, with python-mpd2's
asyncio client: one connection for commands and state, a second one waiting in `idle`.
Prints what it saw as one JSON object. Usage: home_assistant_mpd.py SOCKET FILE1 FILE2"""
import asyncio
import json
import sys

from mpd.asyncio import MPDClient


async def main(socket, first, second):
    seen = {}
    client = MPDClient()
    client.timeout = 10
    await client.connect(socket)
    seen["version"] = client.mpd_version
    # What the integration reads on every update.
    seen["status_before"] = await client.status()
    seen["currentsong_before"] = await client.currentsong()
    seen["outputs"] = await client.outputs()
    seen["listplaylists"] = await client.listplaylists()

    # Playing a media item: clear, add, play.
    await client.clear()
    await client.add(first)
    await client.add(second)
    await client.play()
    seen["status_playing"] = await client.status()
    seen["currentsong"] = await client.currentsong()
    seen["playlistinfo"] = await client.playlistinfo()

    # A second connection waits for changes, as the integration's idle loop does.
    watcher = MPDClient()
    await watcher.connect(socket)
    async def first_change():
        # python-mpd2's asyncio idle is an async iterator of changed subsystems.
        async for changed in watcher.idle(["mixer"]):
            return changed

    idle = asyncio.ensure_future(first_change())
    await asyncio.sleep(0.3)
    await client.setvol(35)
    seen["idle"] = await asyncio.wait_for(idle, 10)
    seen["volume"] = (await client.status())["volume"]

    await client.pause(1)
    seen["paused"] = (await client.status())["state"]
    await client.pause(0)
    seen["resumed"] = (await client.status())["state"]
    await client.next()
    seen["after_next"] = await client.status()
    await client.previous()
    seen["after_previous"] = await client.status()
    await client.seekcur(2)
    seen["after_seek"] = await client.status()
    client.disconnect()
    watcher.disconnect()
    print(json.dumps(seen))


asyncio.run(asyncio.wait_for(main(*sys.argv[1:4]), 60))
