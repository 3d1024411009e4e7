#!/usr/bin/env bash
# Builds the Debian package .build/deb/tonearm_VERSION_ARCH.deb (`make deb`) and checks it with
# lintian. Inside: tonearmd and tonearmctl built in release with the Swift runtime linked in
# (--static-swift-stdlib: the machine needs no Swift toolchain), the systemd socket and service
# (ExecStart at /usr/bin), /etc/tonearm/tonearmd.toml as a conffile (edits survive upgrades), the
# README and protocol documents, and the manual pages tonearmd(8) and tonearmctl(1), generated
# from the ArgumentParser definitions by swift-argument-parser's generate-manual plugin, with a
# CONFIGURATION section made from config/tonearmd.toml (scripts/config-manual.py). Depends: from
# dpkg-shlibdeps (FFmpeg, ALSA, SQLite, libebur128, libc: no Swift library). Nothing here is
# amd64's own: on an arm64 machine with an arm64 Swift toolchain the same script makes the arm64
# package.
#
# lintian (Debian 12's) must report no error, and gives no warning. What it still says as
# information, and why it stays:
# - hardening-no-fortify-functions: Swift calls no fortifiable libc function (memcpy, sprintf…)
#   through _FORTIFY_SOURCE's checked variants; its own bounds checks stand in for them.
# - package-supports-alternative-init-but-no-init.d-script: the daemon is run by systemd only
#   (socket activation, Type=notify, its watchdog); there is no SysV script to offer.
# - spelling-error-in-binary: strings of the Swift runtime and ICU linked in, not ours.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(sed -n 's/.*static let string = "\(.*\)".*/\1/p' Sources/TonearmProtocol/TonearmVersion.swift)
arch=$(dpkg --print-architecture)
out=$PWD/.build/deb
root=$out/tonearm_${version}_$arch
deb=$out/tonearm_${version}_$arch.deb
# Timestamps and dates from the last commit: the same tree makes the same package.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
manual_date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)
rm -rf "$root" "$deb"
mkdir -p "$root/DEBIAN"

# The binaries, in a build directory of their own (other flags than a plain release build).
# -z now: every symbol bound at start, so the relocations can be read-only (lintian's bindnow).
build=(swift build -c release --static-swift-stdlib --scratch-path .build/deb-build -Xlinker -z -Xlinker now)
"${build[@]}" --product tonearmd
"${build[@]}" --product tonearmctl
bin=$("${build[@]}" --show-bin-path)
for tool in tonearmd tonearmctl; do
    install -D -m 755 "$bin/$tool" "$root/usr/bin/$tool"
    strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root/usr/bin/$tool"
done
if ldd "$root/usr/bin/tonearmd" "$root/usr/bin/tonearmctl" | grep -i swift; then
    echo "make-deb: a Swift library is linked dynamically" >&2
    exit 1
fi

# The manual pages. The plugin builds every product (a debug build is enough to describe the
# options, and the one `swift build` made is reused) and writes a page for each tool.
for section in 8 1; do
    swift package --disable-sandbox generate-manual --configuration debug --section "$section" --date "$manual_date" \
        --authors "Tonearm developers<maintainers@tonearm.example>" >/dev/null
    page=$([ "$section" = 8 ] && echo tonearmd || echo tonearmctl)
    generated=$(find .build/plugins -name "$page.$section" -newer "$root/DEBIAN" | head -1)
    [ -n "$generated" ] || { echo "make-deb: generate-manual made no $page.$section" >&2; exit 1; }
    mkdir -p "$root/usr/share/man/man$section"
    if [ "$page" = tonearmd ]; then
        # The CONFIGURATION section goes before AUTHORS (mdoc's order), or at the end.
        python3 scripts/config-manual.py config/tonearmd.toml > "$out/configuration.mdoc"
        awk -v section="$out/configuration.mdoc" '
            /^\.Sh AUTHORS/ && !done { while ((getline line < section) > 0) print line; done = 1 }
            { print }
            END { if (!done) while ((getline line < section) > 0) print line }' "$generated" > "$out/$page.$section"
    else
        cp "$generated" "$out/$page.$section"
    fi
    gzip -9n < "$out/$page.$section" > "$root/usr/share/man/man$section/$page.$section.gz"
done

# The units (ExecStart at /usr/bin), the config and the documents.
for unit in tonearmd.service tonearmd.socket; do
    sed -e 's|/usr/local/bin/|/usr/bin/|g' \
        -e 's|^Documentation=file:///usr/local/share/doc/tonearm/README.md|Documentation=man:tonearmd(8) file:///usr/share/doc/tonearm/README.md|' \
        "systemd/$unit" > "$out/$unit"
    install -D -m 644 "$out/$unit" "$root/lib/systemd/system/$unit"
done
# 0640: it may hold http.password and mpd.password. Its group becomes tonearm once postinst has
# made the group (dpkg-statoverride, which upgrades keep).
install -D -m 640 config/tonearmd.toml "$root/etc/tonearm/tonearmd.toml"
doc=$root/usr/share/doc/tonearm
install -D -m 644 README.md "$doc/README.md"
install -m 644 docs/protocol.md docs/mpd.md docs/architecture.md "$doc/"
install -m 644 packaging/debian/copyright "$doc/copyright"
gzip -9n < packaging/debian/changelog > "$doc/changelog.gz"
chmod 644 "$doc/changelog.gz"

# The control files.
for script in postinst prerm postrm; do install -m 755 "packaging/debian/$script" "$root/DEBIAN/$script"; done
install -m 644 packaging/debian/conffiles "$root/DEBIAN/conffiles"
shlibs=$out/shlibs
rm -rf "$shlibs" && mkdir -p "$shlibs/debian"
printf 'Source: tonearm\n\nPackage: tonearm\nArchitecture: any\n' > "$shlibs/debian/control"
depends=$(cd "$shlibs" && dpkg-shlibdeps -O -e"$root/usr/bin/tonearmd" -e"$root/usr/bin/tonearmctl" 2>/dev/null \
    | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "make-deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@SIZE@|$size|" -e "s|@DEPENDS@|$depends|" \
    packaging/debian/control.in > "$root/DEBIAN/control"
(cd "$root" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z | xargs -0 md5sum) > "$root/DEBIAN/md5sums"
chmod 644 "$root/DEBIAN/md5sums" "$root/DEBIAN/control"
find "$root" -exec touch --no-dereference -d "@$SOURCE_DATE_EPOCH" {} +

dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "made $deb"
lintian --fail-on error --display-info "$deb"
