/// What a loaded item is: read once by the decoder thread when the file opens.
public struct MediaInfo: Sendable, Equatable {
    public var url: String
    public var duration: Double?
    public var codec: String
    public var container: String
    public var sampleRate: Int
    public var channels: Int
    /// Bits per decoded sample when the codec says (lossless formats), else nil.
    public var bitsPerSample: Int?
    public var title: String?
    public var artist: String?
    public var album: String?
    /// The format handed to the device.
    public var outputFormat: PCMFormat

    public init(url: String, duration: Double?, codec: String, container: String, sampleRate: Int,
                channels: Int, bitsPerSample: Int?, title: String?, artist: String?, album: String?,
                outputFormat: PCMFormat) {
        self.url = url
        self.duration = duration
        self.codec = codec
        self.container = container
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitsPerSample = bitsPerSample
        self.title = title
        self.artist = artist
        self.album = album
        self.outputFormat = outputFormat
    }
}
