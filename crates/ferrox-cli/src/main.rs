//! The `ferrox` command line.

fn main() {}
