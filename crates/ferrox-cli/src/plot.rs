//! The loss curve as CSV and as a PNG (plotters). Text needs a font:
//! DejaVu Sans is loaded from the system when present; without it the
//! chart is drawn without labels.

use crate::error::{Error, Result};
use plotters::prelude::*;
use std::path::Path;

/// Writes `step,loss` lines.
pub fn write_csv(path: &Path, losses: &[(u64, f32)]) -> Result<()> {
    let mut text = String::from("step,loss\n");
    for (s, l) in losses {
        text.push_str(&format!("{s},{l}\n"));
    }
    std::fs::write(path, text).map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

const FONT_PATHS: [&str; 2] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

/// Registers a system font for the chart's text; false if none is found.
fn register_font() -> bool {
    static FOUND: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FOUND.get_or_init(|| {
        FONT_PATHS.iter().any(|p| {
            std::fs::read(p).ok().is_some_and(|bytes| {
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok()
            })
        })
    })
}

fn plot_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::io(
        format!("drawing {}", path.display()),
        std::io::Error::other(e.to_string()),
    )
}

/// Draws the loss against the step into a 900x500 PNG.
pub fn write_png(path: &Path, losses: &[(u64, f32)], title: &str) -> Result<()> {
    if losses.is_empty() {
        return Err(Error::Config("no losses to plot".into()));
    }
    let text = register_font();
    let root = BitMapBackend::new(path, (900, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| plot_err(path, e))?;
    let last = losses.last().map_or(1, |l| l.0).max(2);
    let top = losses.iter().map(|l| l.1).fold(0.0f32, f32::max).max(1e-3) * 1.05;
    let mut builder = ChartBuilder::on(&root);
    builder.margin(15);
    if text {
        builder
            .caption(title, ("sans-serif", 22))
            .x_label_area_size(40)
            .y_label_area_size(55);
    }
    let mut chart = builder
        .build_cartesian_2d(1u64..last, 0f32..top)
        .map_err(|e| plot_err(path, e))?;
    if text {
        chart
            .configure_mesh()
            .x_desc("step")
            .y_desc("loss")
            .draw()
            .map_err(|e| plot_err(path, e))?;
    }
    chart
        .draw_series(LineSeries::new(losses.iter().copied(), &BLUE))
        .map_err(|e| plot_err(path, e))?;
    root.present().map_err(|e| plot_err(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_png_and_a_csv() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let losses: Vec<(u64, f32)> = (1..50).map(|s| (s, 5.0 / s as f32)).collect();
        write_csv(&dir.path().join("loss.csv"), &losses)?;
        write_png(&dir.path().join("loss.png"), &losses, "loss")?;
        let png = std::fs::read(dir.path().join("loss.png")).map_err(|e| Error::io("read", e))?;
        assert_eq!(&png[1..4], b"PNG");
        let csv = std::fs::read_to_string(dir.path().join("loss.csv"))
            .map_err(|e| Error::io("read", e))?;
        assert!(csv.starts_with("step,loss\n1,5\n"));
        Ok(())
    }
}
