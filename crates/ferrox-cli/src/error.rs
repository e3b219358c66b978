//! The program's errors: each names what failed and with which values.

/// An error of the `ferrox` program.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An array operation failed.
    #[error(transparent)]
    Array(#[from] ferrox::Error),
    /// A model config or a command-line setting is wrong.
    #[error("config: {0}")]
    Config(String),
    /// A checkpoint does not fit the model it is loaded into.
    #[error("checkpoint {path}: {message}")]
    Checkpoint {
        /// The file.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// A request cannot be served as asked (the server answers 400).
    #[error("{0}")]
    BadRequest(String),
    /// Reading or writing a file failed.
    #[error("{what}: {source}")]
    Io {
        /// The file and the operation.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The sentence encoder or its tokenizer failed.
    #[error("embeddings: {0}")]
    Embeddings(String),
}

/// The program's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An I/O error on `what`.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}
