//! Empty: it exists so that `[build-dependencies]` (host-side feature
//! unification, see Cargo.toml) are part of the build.
fn main() {}
