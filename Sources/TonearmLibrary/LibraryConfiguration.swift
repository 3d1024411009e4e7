import Foundation

/// The config's `[library]` table: where the music is and how it is kept in the database.
package struct LibraryConfiguration: Sendable, Equatable {
    /// The music directory (absolute, links resolved); nil: no library.
    package var musicDirectory: String?
    /// An incremental scan when the daemon starts.
    package var scanOnStart = true
    /// Directory links are followed (a link back up the tree is seen and skipped).
    package var followSymlinks = true
    /// Threads that walk the tree and read files' tags during a scan, beside the scan thread.
    package var scanThreads = ProcessInfo.processInfo.activeProcessorCount
    /// Changes to the music directory are seen as they happen (inotify).
    package var watch = true
    /// Seconds between scans of the whole tree when it cannot be watched (the kernel's limit of
    /// watches is reached); 0: none.
    package var rescanIntervalSeconds = 3600.0
    /// Every song's loudness is measured (EBU R128) in the background after a scan, at idle
    /// priority, for `replay_gain.mode` `auto` and `loudness`.
    package var measureLoudness = true
    /// Where clients' stored playlists are kept; nil: `playlists` in the state directory.
    package var playlistDirectory: String?

    package init(musicDirectory: String? = nil, scanOnStart: Bool = true, followSymlinks: Bool = true) {
        self.musicDirectory = musicDirectory
        self.scanOnStart = scanOnStart
        self.followSymlinks = followSymlinks
    }
}
