//! The server's one error type.

/// Why a request or the server failed.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The spec, modules or weights could not be set up (exit 2 at start-up).
    #[error("set-up: {0}")]
    Setup(String),
    /// The request was refused at admission, before anything ran (HTTP 400, CLI exit 2).
    #[error("refused: {0}")]
    Refused(String),
    /// IREE failed while running a request (HTTP 500 / error event, CLI exit 3).
    #[error("execution: {0}")]
    Execution(String),
    /// Every slot is busy and the queue is full (HTTP 503).
    #[error("busy: {0}")]
    Busy(String),
}

impl ServerError {
    /// The process exit code of this error in CLI mode (parity's scheme: 2 input, 3 execution).
    pub fn exit_code(&self) -> i32 {
        match self {
            ServerError::Setup(_) | ServerError::Refused(_) => 2,
            ServerError::Execution(_) | ServerError::Busy(_) => 3,
        }
    }

    /// The OpenAI error `type` of this error.
    pub fn kind(&self) -> &'static str {
        match self {
            ServerError::Refused(_) => "invalid_request_error",
            ServerError::Busy(_) => "server_busy",
            ServerError::Setup(_) | ServerError::Execution(_) => "server_error",
        }
    }

    /// The HTTP status of this error.
    pub fn status(&self) -> (u16, &'static str) {
        match self {
            ServerError::Refused(_) => (400, "Bad Request"),
            ServerError::Busy(_) => (503, "Service Unavailable"),
            ServerError::Setup(_) | ServerError::Execution(_) => (500, "Internal Server Error"),
        }
    }
}
