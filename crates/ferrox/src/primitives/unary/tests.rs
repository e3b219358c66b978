//! Unit tests of the unary ops.
