import Foundation
import TonearmFrontEnd
import TonearmLibrary
import TonearmPlayer
import TonearmProtocol

/// What JSON-RPC's `playlist.*` methods (`RPCMethods.playlists`) share: the store or its
/// absence, how a queue item is written in it, and its failures in JSON-RPC's words.
extension RequestRouter {
    /// The stored playlists, or `playlists_unavailable` when the daemon keeps none.
    func requirePlaylists() throws -> PlaylistStore {
        guard let playlists else {
            throw RPC.Failure(.rejected, "no stored playlists here", data: ["kind": "playlists_unavailable"])
        }
        return playlists
    }

    /// How a queue item is written in a stored playlist: its path in the music directory when it
    /// is there (as MPD writes it), else its absolute path or URL.
    func storedEntry(_ url: URL) -> String {
        if let root = library?.root, url.isFileURL, url.path.hasPrefix(root + "/") { return String(url.path.dropFirst(root.count + 1)) }
        return url.isFileURL ? url.path : url.absoluteString
    }

    /// The store's failures in JSON-RPC's words.
    static func stored<T>(_ body: () throws(PlaylistStore.Failure) -> T) throws -> T {
        do throws(PlaylistStore.Failure) { return try body() } catch {
            switch error {
            case .badName: throw RPC.Failure(.invalidParams, "invalid params: 'name': \(error) (not empty, no '/', no line break)")
            case .noSuchPlaylist: throw RPC.Failure(.rejected, "\(error)", data: ["kind": "not_found"])
            case .exists: throw RPC.Failure(.rejected, "\(error) (give replace: true to replace it)", data: ["kind": "exists"])
            default: throw RPC.Failure(.rejected, "\(error)", data: ["kind": "playlist_failed"])
            }
        }
    }
}
