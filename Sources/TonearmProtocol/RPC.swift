import Foundation

/// JSON-RPC 2.0 framing: one request object per line in, one response or notification per line out.
package enum RPC {
    package enum ErrorCode: Int, Sendable {
        case parseError = -32700
        case invalidRequest = -32600
        case methodNotFound = -32601
        case invalidParams = -32602
        case internalError = -32603
        /// The state machine does not allow the action now; `data` names the state and the action.
        case rejected = -32000
        /// Loading or playing failed; `data` holds the error's kind, message and recoverability.
        case mediaFailed = -32001
        /// A newer command (load, stop) replaced this one before it finished.
        case superseded = -32002
        /// The daemon serves `control.max_clients` connections already, or this client may not
        /// do this (`control.allow_*`, `read_gids`): refused (a refused connection is closed).
        case tooManyClients = -32003
        package static let permissionDenied = ErrorCode.tooManyClients
    }

    package struct Failure: Error, Sendable {
        package var code: ErrorCode
        package var message: String
        package var data: JSONValue?

        package init(_ code: ErrorCode, _ message: String, data: JSONValue? = nil) {
            self.code = code
            self.message = message
            self.data = data
        }
    }

    package struct Request: Sendable {
        /// nil for a notification (a request without an id): it gets no response.
        package var id: JSONValue?
        package var method: String
        package var params: JSONValue
    }

    /// A line that is not a usable request, with the id when it could be read so the client can match it.
    package struct BadRequest: Error, Sendable {
        /// nil: the request was a notification (no id), which gets no answer, not even an error.
        package var id: JSONValue?
        package var failure: Failure
    }

    private static let requestMembers = ["jsonrpc", "id", "method", "params"]

    /// Parses one line.
    package static func parseRequest(_ line: UnsafeRawBufferPointer) -> Result<Request, BadRequest> {
        let json: JSONValue
        do { json = try JSONCoding.parse(line, keepsIDText: true) } catch {
            return .failure(BadRequest(id: JSONValue.null, failure: Failure(.parseError, "parse error: \(error.description)")))
        }
        guard case .object(let object) = json else {
            if case .array = json {
                return .failure(
                    BadRequest(
                        id: JSONValue.null, failure: Failure(.invalidRequest, "batch requests are not supported: send one object per line"))
                )
            }
            return .failure(BadRequest(id: JSONValue.null, failure: Failure(.invalidRequest, "invalid request: expected a JSON object")))
        }
        var id = object["id"]
        if let candidate = id {
            switch candidate {
            case .string, .null: break
            case .number(let number) where number.isFinite: break
            case .encoded: break  // a number, as sent
            default:
                id = nil
                return .failure(
                    BadRequest(
                        id: JSONValue.null, failure: Failure(.invalidRequest, "invalid request: id must be a string, a number or null")))
            }
        }
        guard object["jsonrpc"] == .string("2.0") else {
            return .failure(BadRequest(id: id ?? .null, failure: Failure(.invalidRequest, "invalid request: \"jsonrpc\" must be \"2.0\"")))
        }
        guard case .string(let method)? = object["method"] else {
            return .failure(BadRequest(id: id ?? .null, failure: Failure(.invalidRequest, "invalid request: \"method\" must be a string")))
        }
        if let unknown = object.keys.first(where: { !requestMembers.contains($0) }) {
            return .failure(
                BadRequest(id: id ?? .null, failure: Failure(.invalidRequest, "invalid request: unknown member \"\(unknown.prefix(64))\"")))
        }
        let params = object["params"] ?? .object([:])
        switch params {
        case .object: break
        case .array(let items) where items.isEmpty: break
        default:
            // A well-formed notification with params we cannot take: no answer (JSON-RPC 2.0).
            return .failure(BadRequest(id: id, failure: Failure(.invalidParams, "invalid params: \"params\" must be an object")))
        }
        return .success(Request(id: id, method: method, params: params.isEmptyArray ? .object([:]) : params))
    }

    package static func response(id: JSONValue, result: JSONValue) -> JSONValue {
        ["jsonrpc": "2.0", "id": id, "result": result]
    }

    package static func response(id: JSONValue, error: Failure) -> JSONValue {
        var body: [String: JSONValue] = ["code": .number(Double(error.code.rawValue)), "message": .string(error.message)]
        if let data = error.data { body["data"] = data }
        return ["jsonrpc": "2.0", "id": id, "error": .object(body)]
    }

    package static func notification(method: String, params: JSONValue) -> JSONValue {
        ["jsonrpc": "2.0", "method": .string(method), "params": params]
    }
}

extension JSONValue {
    fileprivate var isEmptyArray: Bool { if case .array(let a) = self { a.isEmpty } else { false } }
}
