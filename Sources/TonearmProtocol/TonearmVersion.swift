/// Tonearm's version: `tonearmd --version`, `tonearmctl --version`, the `version` method, and the
/// Debian package (`scripts/make-deb.sh` reads it from here).
public enum TonearmVersion {
    public static let string = "0.1.0"
}
