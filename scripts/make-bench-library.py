#!/usr/bin/env python3
"""Makes the library benchmark's tree once: COUNT tagged tracks (FLAC and MP3, half each) under
DIR, as artist/album/NN title.ext, with the tags a tagger leaves (artist, album artist, album,
title, track, disc, date, genre, composer). Each file is a tiny template made by FFmpeg, its tags
written here (a FLAC VORBIS_COMMENT block; an ID3v2.4 tag before the MP3 frames): 100,000 files
take a minute instead of an hour of encoding. A finished tree has DIR/.complete (and its
count in DIR/.count); it is not made again. Usage: make-bench-library.py COUNT DIR"""
import os
import random
import struct
import subprocess
import sys

WORDS = ["night", "day", "river", "stone", "light", "dream", "fire", "rain", "blue", "gold", "road", "home",
         "heart", "city", "sea", "wind", "moon", "star", "song", "dance", "winter", "summer", "café", "naïve",
         "über", "señor", "øre", "smile", "shadow", "garden", "train", "letter", "mirror", "storm", "echo"]
GENRES = ["Rock", "Jazz", "Pop", "Classical", "Electronic", "Folk", "Blues", "Hip-Hop", "Soul", "Metal",
          "Reggae", "Country", "Ambient", "Punk", "Latin", "Funk", "Disco", "Gospel", "Opera", "Chanson"]


def template(path, codec, suffix):
    if not os.path.exists(path):
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=f=440:d=0.2:sample_rate=44100",
                        "-ac", "2", "-map_metadata", "-1", "-c:a", codec] + suffix + [path], check=True)
    with open(path, "rb") as f:
        return f.read()


def flac_audio(data):
    """The STREAMINFO block and the frames, without the other metadata blocks."""
    assert data[:4] == b"fLaC"
    pos, streaminfo = 4, None
    while True:
        header = data[pos]
        length = int.from_bytes(data[pos + 1:pos + 4], "big")
        if header & 0x7F == 0:
            streaminfo = data[pos + 4:pos + 4 + length]
        pos += 4 + length
        if header & 0x80:
            return streaminfo, data[pos:]


def flac_with_tags(streaminfo, frames, tags):
    vendor = b"tonearm-bench"
    comments = [f"{k}={v}".encode() for k, v in tags]
    body = struct.pack("<I", len(vendor)) + vendor + struct.pack("<I", len(comments))
    for c in comments:
        body += struct.pack("<I", len(c)) + c
    return (b"fLaC" + bytes([0]) + len(streaminfo).to_bytes(3, "big") + streaminfo
            + bytes([0x84]) + len(body).to_bytes(3, "big") + body + frames)


def syncsafe(n):
    return bytes([(n >> 21) & 0x7F, (n >> 14) & 0x7F, (n >> 7) & 0x7F, n & 0x7F])


def mp3_with_tags(frames, tags):
    ids = {"TITLE": "TIT2", "ARTIST": "TPE1", "ALBUM": "TALB", "ALBUMARTIST": "TPE2", "TRACKNUMBER": "TRCK",
           "DISCNUMBER": "TPOS", "DATE": "TDRC", "GENRE": "TCON", "COMPOSER": "TCOM"}
    body = b""
    for key, value in tags:
        text = b"\x03" + value.encode()
        body += ids[key].encode() + syncsafe(len(text)) + b"\x00\x00" + text
    return b"ID3\x04\x00\x00" + syncsafe(len(body)) + body + frames


def main(count, root):
    if os.path.exists(os.path.join(root, ".complete")):
        return
    os.makedirs(root, exist_ok=True)
    work = os.path.join(os.path.dirname(os.path.abspath(root)), "library-templates")
    os.makedirs(work, exist_ok=True)
    streaminfo, flac_frames = flac_audio(template(os.path.join(work, "t.flac"), "flac", []))
    mp3 = template(os.path.join(work, "t.mp3"), "libmp3lame", ["-b:a", "64k", "-write_xing", "0", "-id3v2_version", "0"])
    rng = random.Random(26)
    made = 0
    artist_number = 0
    while made < count:
        artist_number += 1
        artist = " ".join(rng.choice(WORDS).title() for _ in range(2)) + f" {artist_number}"
        for album_number in range(1, 11):
            if made >= count:
                break
            album = " ".join(rng.choice(WORDS) for _ in range(3)).title()
            compilation = album_number == 10
            album_artist = "Various Artists" if compilation else artist
            date = str(1960 + rng.randrange(60))
            genre = rng.choice(GENRES)
            folder = os.path.join(root, artist, f"{date} {album}")
            os.makedirs(folder, exist_ok=True)
            for track in range(1, 11):
                if made >= count:
                    break
                title = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(2, 5))).capitalize()
                performer = f"Guest {rng.randrange(5000)}" if compilation else artist
                tags = [("TITLE", title), ("ARTIST", performer), ("ALBUM", album), ("ALBUMARTIST", album_artist),
                        ("TRACKNUMBER", str(track)), ("DISCNUMBER", "1"), ("DATE", date), ("GENRE", genre),
                        ("COMPOSER", f"Composer {rng.randrange(2000)}")]
                flac = made % 2 == 0
                name = f"{track:02d} {title}.{'flac' if flac else 'mp3'}"
                data = flac_with_tags(streaminfo, flac_frames, tags) if flac else mp3_with_tags(mp3, tags)
                with open(os.path.join(folder, name), "wb") as f:
                    f.write(data)
                made += 1
    with open(os.path.join(root, ".count"), "w") as f:
        f.write(f"{made}\n")
    open(os.path.join(root, ".complete"), "w").close()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
