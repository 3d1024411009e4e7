// swift-tools-version:6.0
// Tonearm: a headless audio player daemon. Dependencies point inward:
// server -> (protocol, player); player -> (core, engine); the core imports nothing of the rest.
import PackageDescription

let package = Package(
    name: "Tonearm",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "tonearmd", targets: ["tonearmd"]),
        .executable(name: "tonearmctl", targets: ["tonearmctl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/LebJe/TOMLKit.git", from: "0.6.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CFFmpeg", path: "Modulemaps/CFFmpeg", pkgConfig: "libavformat",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libswresample-dev", "libavutil-dev"])]),
        .systemLibrary(
            name: "CALSA", path: "Modulemaps/CALSA", pkgConfig: "alsa",
            providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(
            name: "CEBUR128", path: "Modulemaps/CEBUR128", pkgConfig: "libebur128",
            providers: [.apt(["libebur128-dev"])]),
        .systemLibrary(
            name: "CZlib", path: "Modulemaps/CZlib", pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]),
        // What glibc has and Swift's Glibc module leaves out (thread names).
        .systemLibrary(name: "CLinux", path: "Modulemaps/CLinux"),

        // A lock-guarded value ThreadSanitizer can see (Locked.swift), a stream fan-out, and the
        // daemon's named threads (NamedThread, WorkerThread, JobThread).
        .target(name: "TonearmSync", dependencies: ["CLinux"]),
        // Pure core: the playback state machine. No I/O, no clocks, no C.
        .target(name: "TonearmCore", dependencies: ["TonearmSync"]),
        // What media and the audio path are, as values: formats, media info and tags, ReplayGain,
        // the output and input settings. No C, no I/O: what the front-ends show and configure.
        .target(name: "TonearmMedia"),
        // Impure engine: FFmpeg decode, PCM buffer, ALSA output on real threads.
        .target(name: "TonearmEngine", dependencies: ["CFFmpeg", "CALSA", "CEBUR128", "CLinux", "TonearmMedia", "TonearmSync"]),
        // Adapter + coordinator: engine observations -> PlaybackActions; user actions -> engine calls.
        .target(
            name: "TonearmPlayer",
            dependencies: [
                "TonearmCore", "TonearmEngine", "TonearmMedia", "TonearmSync", .product(name: "Logging", package: "swift-log"),
            ]),
        // What a client and the daemon share: JSON values and their coding, JSON-RPC messages and
        // framing, the line decoder, the socket path rule, the client. No FFmpeg, ALSA or player.
        .target(
            name: "TonearmProtocol",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]),
        // The music library: its SQLite database (GRDB, system libsqlite3) with one writer
        // thread, and the scan that fills it. Media files are read through an injected reader,
        // so it needs neither the engine nor FFmpeg.
        .target(
            name: "TonearmLibrary",
            dependencies: [
                "CLinux", "TonearmMedia", "TonearmSync", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // What every front-end shares: listeners, access rules, the ordered request path with its
        // back-pressure and limits, the source rules, work kept off the event loop.
        .target(
            name: "TonearmFrontEnd",
            dependencies: [
                "TonearmProtocol", "TonearmCore", "TonearmMedia", "TonearmSync",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // JSON-RPC 2.0 on the control socket.
        .target(
            name: "TonearmRPC",
            dependencies: [
                "TonearmFrontEnd", "TonearmProtocol", "TonearmPlayer", "TonearmLibrary", "TonearmCore", "TonearmMedia", "TonearmSync",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // MPD's text protocol, for the clients people already own.
        .target(
            name: "TonearmMPD",
            dependencies: [
                "TonearmFrontEnd", "TonearmProtocol", "TonearmPlayer", "TonearmLibrary", "TonearmCore", "TonearmMedia", "TonearmSync",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The web remote: the page, covers, and JSON-RPC on a WebSocket through the request path.
        .target(
            name: "TonearmWeb",
            dependencies: [
                "CZlib", "TonearmFrontEnd", "TonearmRPC", "TonearmProtocol", "TonearmPlayer", "TonearmLibrary", "TonearmSync",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // The page, built into the binary from the files as they are (`PackageResources`).
            resources: [
                .embedInCode("Page/app.js"), .embedInCode("Page/icon.svg"), .embedInCode("Page/index.html"),
                .embedInCode("Page/style.css"),
            ]),
        // The UPnP/DLNA MediaRenderer: SSDP, its own HTTP listener (description, SOAP control,
        // GENA events) and casting through the player.
        .target(
            name: "TonearmUPnP",
            dependencies: [
                "TonearmFrontEnd", "TonearmProtocol", "TonearmPlayer", "TonearmCore", "TonearmMedia", "TonearmSync",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The daemon's server: config, the front-ends on one event loop, systemd.
        .target(
            name: "TonearmServer",
            dependencies: [
                "TonearmFrontEnd", "TonearmRPC", "TonearmMPD", "TonearmWeb", "TonearmUPnP", "TonearmLibrary",
                "TonearmProtocol", "TonearmCore", "TonearmMedia", "TonearmSync",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "TOMLKit", package: "TOMLKit"),
            ],
            // The documented default config (a link to config/tonearmd.toml), built into tonearmd.
            resources: [.embedInCode("tonearmd.toml")]),
        .executableTarget(
            name: "tonearmd",
            dependencies: [
                "TonearmServer", "TonearmFrontEnd", "TonearmEngine", "TonearmPlayer", "TonearmLibrary", "TonearmMedia", "TonearmProtocol",
                "TonearmSync", "TonearmUPnP",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: [
                // The daemon's own concurrency executors (DaemonExecutors.swift) are installed by the
                // compiler only with availability checking off: Swift 6.3's experimental SPI.
                .unsafeFlags(["-Xfrontend", "-disable-availability-checking"])
            ]),
        // The benchmark (docs/performance.md); run through `make bench`.
        .executableTarget(
            name: "tonearm-bench",
            dependencies: [
                "CLinux", "TonearmRigs",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        .executableTarget(
            name: "tonearmctl",
            dependencies: [
                "TonearmProtocol", "TonearmMedia",
                .product(name: "TOMLKit", package: "TOMLKit"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),

        .testTarget(name: "TonearmCoreTests", dependencies: ["TonearmCore", "TonearmSync"]),
        .testTarget(name: "TonearmMediaTests", dependencies: ["TonearmMedia"]),
        .testTarget(
            name: "TonearmLibraryTests",
            dependencies: [
                "TonearmLibrary", "TonearmMedia", "TonearmEngine", "TonearmSync", "TonearmTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "TonearmProtocolTests",
            dependencies: [
                "TonearmProtocol", .product(name: "NIOCore", package: "swift-nio"),
            ]),
        // Fixture paths, WAV parsing and waiting helpers shared by the test targets.
        .target(name: "TonearmTestSupport", dependencies: ["TonearmSync", "TonearmRigs"], path: "Tests/TonearmTestSupport"),
        // The real peers and clients the tests and the benchmark both drive: a line client over
        // Unix or TCP sockets, a WebSocket client, an HTTP server and a fault proxy, Snapcast, the
        // fixtures and temporary directories, tools run with a deadline.
        .target(name: "TonearmRigs"),
        .testTarget(
            name: "TonearmEngineTests",
            dependencies: ["TonearmEngine", "TonearmMedia", "TonearmPlayer", "TonearmCore", "TonearmSync", "TonearmTestSupport"]),
        .testTarget(
            name: "TonearmPlayerTests",
            dependencies: [
                "TonearmPlayer", "TonearmCore", "TonearmEngine", "TonearmMedia", "TonearmSync", "TonearmTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "TonearmFrontEndTests",
            dependencies: [
                "TonearmFrontEnd", "TonearmProtocol", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"), .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "TonearmRPCTests",
            dependencies: [
                "TonearmRPC", "TonearmFrontEnd", "TonearmPlayer", "TonearmMedia", "TonearmProtocol", "TonearmTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
            ]),
        .testTarget(
            name: "TonearmMPDTests",
            dependencies: [
                "TonearmMPD", "TonearmFrontEnd", "TonearmLibrary", "TonearmPlayer", "TonearmEngine", "TonearmMedia", "TonearmTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "TonearmWebTests",
            dependencies: [
                "TonearmWeb", "TonearmFrontEnd", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]),
        .testTarget(
            name: "TonearmUPnPTests",
            dependencies: [
                "TonearmUPnP", "TonearmCore", "TonearmMedia", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "TonearmServerTests",
            dependencies: [
                "TonearmServer", "TonearmFrontEnd", "TonearmMPD", "TonearmMedia", "TonearmProtocol", "TonearmTestSupport",
            ]),
        .testTarget(name: "TonearmIntegrationTests", dependencies: ["TonearmServer", "TonearmProtocol", "TonearmTestSupport"]),
    ]
)
