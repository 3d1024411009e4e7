/// Tonearm's version: `tonearmd --version`, `tonearmctl --version`, the `version` method, and the
/// Debian package (`scripts/make-deb.sh` reads it from here).
package enum TonearmVersion {
    package static let string = "0.1.0"
}
