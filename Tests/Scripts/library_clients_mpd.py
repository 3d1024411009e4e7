"""Browses an MPD server's library the way M.A.L.P. (Android) and myMPD (web) build their views,
with python-mpd2: artists and albums by `list … group …`, an album's tracks by `find` with
`sort`, searches by filter expressions with `window` (myMPD's paging), counts, and the
directory view. Prints every answer as one JSON object, so two servers can be compared.
Usage: library_clients_mpd.py SOCKET"""
import json
import sys

from mpd import MPDClient


def main(socket):
    client = MPDClient()
    client.timeout = 20
    client.connect(socket)
    seen = {}

    # M.A.L.P.: the artists tab, an artist's albums, an album's tracks, the search screen.
    seen["malp_albumartists"] = client.list("albumartist")
    seen["malp_artists"] = client.list("artist")
    seen["malp_albums_by_albumartist"] = client.list("album", "group", "albumartist")
    seen["malp_albums_of_artist"] = client.list("album", "(AlbumArtist == 'Various')", "group", "date")
    seen["malp_album_tracks"] = client.find("album", "Zwölf", "albumartist", "Various")
    seen["malp_search_any"] = client.search("any", "café")
    seen["malp_search_title"] = client.search("title", "NAÏVE")
    seen["malp_lsinfo_root"] = client.lsinfo("/")
    seen["malp_lsinfo_dir"] = client.lsinfo("Alpha")

    # myMPD: paged searches with expressions, sorted album views, counts for the header.
    seen["mympd_search_window"] = client.search("(any contains 'a')", "sort", "Title", "window", "0:3")
    seen["mympd_search_window_next"] = client.search("(any contains 'a')", "sort", "Title", "window", "3:6")
    seen["mympd_find_sorted"] = client.find("((Artist == 'Alpha') AND (Album == 'One'))", "sort", "-Track")
    seen["mympd_find_base"] = client.find("(base 'Béta')", "sort", "Title")
    seen["mympd_genre_list"] = client.list("Genre")
    seen["mympd_albums_grouped"] = client.list("Album", "group", "AlbumArtist", "group", "Date")
    seen["mympd_count_group"] = client.count("group", "artist")
    seen["mympd_count_expression"] = client.count("(Title contains 'e')")
    seen["mympd_find_regex"] = client.find("(Title =~ '^[A-C]')")
    seen["mympd_find_not"] = client.find("(!(Artist == 'Alpha'))", "sort", "Title")
    seen["stats"] = {k: v for k, v in client.stats().items() if k in ("artists", "albums", "songs", "db_playtime")}
    client.close()
    client.disconnect()
    print(json.dumps(seen, ensure_ascii=False, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1])
