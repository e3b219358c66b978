//! The `ferrox` binary: exit codes and messages for bad input, and a
//! train → generate round trip through files.

use std::process::{Command, Output};

fn ferrox(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferrox"))
        .args(args)
        .output()
        .expect("the ferrox binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn usage_errors_exit_2_and_runtime_errors_exit_1() {
    let o = ferrox(&["train", "--steps", "many"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = ferrox(&[
        "generate",
        "--model",
        "/nonexistent.safetensors",
        "--prompt",
        "1+1=",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("/nonexistent.safetensors"),
        "{}",
        stderr(&o)
    );
    let o = ferrox(&["serve"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--model"), "{}", stderr(&o));
}

#[test]
fn a_file_that_is_not_a_checkpoint_is_named() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("junk.safetensors");
    std::fs::write(&path, b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")?;
    let p = path.to_string_lossy().into_owned();
    let o = ferrox(&["generate", "--model", &p, "--prompt", "1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("junk.safetensors"), "{}", stderr(&o));
    Ok(())
}

#[test]
fn train_then_generate_from_a_text_file() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("text.txt");
    std::fs::write(
        &data,
        "the quick brown fox jumps over the lazy dog\n".repeat(200),
    )?;
    let out = dir.path().join("run");
    let summary = dir.path().join("summary.json");
    let o = ferrox(&[
        "train",
        "--tiny",
        "--steps",
        "3",
        "--batch",
        "2",
        "--seq",
        "32",
        "--quiet",
        "--data",
        &data.to_string_lossy(),
        "--out",
        &out.to_string_lossy(),
        "--summary-json",
        &summary.to_string_lossy(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&summary)?)?;
    assert_eq!(s["steps"], 3);
    let ckpt = out.join("model.safetensors");
    let o = ferrox(&[
        "generate",
        "--model",
        &ckpt.to_string_lossy(),
        "--prompt",
        "the ",
        "--max-tokens",
        "5",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("the "));
    Ok(())
}
