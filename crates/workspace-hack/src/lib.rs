//! No code: this crate only unifies dependency features between
//! whole-workspace builds and builds of `ferrox-py` alone (see Cargo.toml).
