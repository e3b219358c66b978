//! The demo in its shortened mode, as CI runs it: it must pass its own
//! checks (one training trace, the loss falls, the checkpoint reloads to
//! the same logits, the crowd of clients gets what one client gets).

use ferrox_cli::demo::{DemoOptions, run};

#[test]
fn the_quick_demo_passes_its_checks() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let report = run(&DemoOptions::quick(dir.path().to_path_buf()))?;
    assert_eq!(report.train.traces, 1);
    assert_eq!(report.load.len(), 2);
    assert_eq!(report.load[1].clients, 8);
    assert!(report.load.iter().all(|l| l.tokens > 0));
    for f in ["model.safetensors", "loss.png", "loss.csv"] {
        assert!(dir.path().join(f).is_file(), "{f}");
    }
    let table = report.table();
    assert!(
        table.contains("generation tokens/s, 8 client(s)"),
        "{table}"
    );
    Ok(())
}
