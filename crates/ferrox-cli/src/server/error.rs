//! API errors: an HTTP status and an OpenAI-style body,
//! `{"error": {"message": ..., "type": ..., "code": status}}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An error answered to a client.
#[derive(Debug)]
pub struct ApiError {
    /// The status (4xx for the client's mistakes, 5xx for ours).
    pub status: StatusCode,
    /// What went wrong, for the client.
    pub message: String,
}

impl ApiError {
    /// A 400 Bad Request.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
        }
    }
    /// A 404 Not Found.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::NOT_FOUND,
            message: message.into(),
        }
    }
}

impl From<crate::Error> for ApiError {
    fn from(e: crate::Error) -> ApiError {
        let status = match e {
            crate::Error::BadRequest(_) => StatusCode::BAD_REQUEST,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError {
            status,
            message: e.to_string(),
        }
    }
}

impl From<axum::extract::rejection::JsonRejection> for ApiError {
    fn from(e: axum::extract::rejection::JsonRejection) -> ApiError {
        ApiError::bad_request(format!("invalid request body: {}", e.body_text()))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let kind = if self.status.is_client_error() {
            "invalid_request_error"
        } else {
            "server_error"
        };
        let body =
            json!({"error": {"message": self.message, "type": kind, "code": self.status.as_u16()}});
        (self.status, Json(body)).into_response()
    }
}
