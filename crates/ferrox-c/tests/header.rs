//! include/ferrox.h is cbindgen's output for this crate, with the op
//! table's declarations as the trailer (cbindgen does not expand macros).
//! This test regenerates it and fails if the checked-in copy differs;
//! `FERROX_BLESS=1 cargo test -p ferrox-c --test header` rewrites it.

use std::path::Path;

fn generate() -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut config =
        cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml parses");
    config.trailer = Some(format!(
        "\n{}\n#endif  /* FERROX_H */",
        ferrox_c::ops::c_declarations()
    ));
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen generates the header");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("the header is UTF-8")
}

#[test]
fn header_is_generated_and_up_to_date() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("include/ferrox.h");
    let fresh = generate();
    if std::env::var_os("FERROX_BLESS").is_some() {
        std::fs::write(&path, &fresh).expect("write include/ferrox.h");
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == fresh,
        "include/ferrox.h is stale: run `FERROX_BLESS=1 cargo test -p ferrox-c --test header`"
    );
}
