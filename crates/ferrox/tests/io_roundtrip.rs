//! Round trips of every dtype through every format ferrox writes, views
//! and lazy copies, metadata, and the atomic save.

use ferrox::io::{self, Arrays, Format, GgufType, GgufValue, Loaded, Metadata};
use ferrox::{Array, DType, Result};
use std::collections::BTreeMap;
use std::path::Path;

/// A `shape` array of `dtype` with varied values (bools alternate, floats
/// have fractions, signed ones go negative).
fn sample(shape: &[usize], dtype: DType) -> Result<Array> {
    let n: usize = shape.iter().product();
    let x = ferrox::arange(0.0, n as f64, 1.0, DType::Float32)?;
    let x = if dtype == DType::Bool {
        ferrox::remainder(&x, &Array::weak_f64(3.0))?
    } else if dtype.is_inexact() {
        ferrox::multiply(
            &ferrox::subtract(&x, &Array::weak_f64(3.0))?,
            &Array::weak_f64(0.75),
        )?
    } else if dtype.category() == ferrox::dtype::Category::Signed {
        ferrox::subtract(&x, &Array::weak_f64(5.0))?
    } else {
        x
    };
    let shape: Vec<isize> = shape.iter().map(|&d| d as isize).collect();
    x.astype(dtype)?.reshape(&shape)
}

fn equal(a: &Array, b: &Array) -> bool {
    a.dtype() == b.dtype()
        && a.shape() == b.shape()
        && ferrox::array_equal(a, b, true)
            .and_then(|e| e.item::<bool>())
            .unwrap_or(false)
}

const SHAPES: &[&[usize]] = &[&[], &[1], &[23], &[4, 6, 3, 1, 2], &[0, 3]];

fn dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

#[test]
fn npy_round_trips_every_dtype_and_shape() -> Result<()> {
    let d = dir();
    for dtype in DType::ALL {
        for (i, shape) in SHAPES.iter().enumerate() {
            let a = sample(shape, dtype)?;
            let path = d.path().join(format!("{dtype}_{i}.npy"));
            io::save(&path, &a)?;
            let Loaded::Array(b) = io::load(&path, None)? else {
                panic!("npy loads one array");
            };
            assert!(equal(&a, &b), "{dtype} {shape:?}");
        }
    }
    Ok(())
}

#[test]
fn npz_round_trips_stored_and_deflated() -> Result<()> {
    let d = dir();
    for compressed in [false, true] {
        let mut arrays = Arrays::new();
        for dtype in DType::ALL {
            arrays.insert(dtype.name().to_string(), sample(&[3, 5], dtype)?);
        }
        arrays.insert("empty".into(), sample(&[0, 3], DType::Float32)?);
        let path = d.path().join(format!("all_{compressed}.npz"));
        io::savez(&path, &arrays, compressed)?;
        let back = io::load(&path, None)?.into_arrays();
        assert_eq!(back.len(), arrays.len());
        for (k, a) in &arrays {
            assert!(equal(a, &back[k]), "{k}");
        }
    }
    Ok(())
}

#[test]
fn safetensors_round_trips_every_dtype_with_metadata() -> Result<()> {
    let d = dir();
    let mut arrays = Arrays::new();
    for dtype in DType::ALL {
        for (i, shape) in SHAPES.iter().enumerate() {
            arrays.insert(format!("{dtype}.{i}"), sample(shape, dtype)?);
        }
    }
    let meta = BTreeMap::from([
        ("format".to_string(), "mlx".to_string()),
        ("note".to_string(), "ünïcode \"quoted\"".to_string()),
    ]);
    let path = d.path().join("all.safetensors");
    io::save_safetensors(&path, &arrays, Some(&meta))?;
    let Loaded::Arrays {
        arrays: back,
        metadata,
    } = io::load(&path, None)?
    else {
        panic!("dict format");
    };
    assert_eq!(metadata, Metadata::Safetensors(meta));
    assert_eq!(back.len(), arrays.len());
    for (k, a) in &arrays {
        assert!(equal(a, &back[k]), "{k}");
    }
    Ok(())
}

#[test]
fn gguf_round_trips_its_dtypes_and_rejects_the_others() -> Result<()> {
    let d = dir();
    let plain = [
        DType::Float32,
        DType::Float16,
        DType::BFloat16,
        DType::Float64,
        DType::Int8,
        DType::Int16,
        DType::Int32,
        DType::Int64,
    ];
    let mut arrays = Arrays::new();
    for dtype in plain {
        for (i, shape) in SHAPES.iter().enumerate() {
            arrays.insert(format!("{dtype}.{i}"), sample(shape, dtype)?);
        }
    }
    let path = d.path().join("all.gguf");
    io::save_gguf(&path, &arrays, &BTreeMap::new())?;
    let back = io::load(&path, None)?.into_arrays();
    for (k, a) in &arrays {
        assert!(equal(a, &back[k]), "{k}");
    }
    for dtype in [DType::Bool, DType::UInt8, DType::UInt32, DType::Complex64] {
        let one = Arrays::from([("x".to_string(), sample(&[2], dtype)?)]);
        let err = io::save_gguf(d.path().join("bad.gguf"), &one, &BTreeMap::new()).unwrap_err();
        assert_eq!(err.kind(), ferrox::ErrorKind::Dtype, "{dtype}");
    }
    Ok(())
}

#[test]
fn gguf_metadata_of_every_value_type_round_trips() -> Result<()> {
    use GgufValue as V;
    let meta: BTreeMap<String, GgufValue> = [
        ("u8", V::U8(250)),
        ("i8", V::I8(-7)),
        ("u16", V::U16(65000)),
        ("i16", V::I16(-30000)),
        ("u32", V::U32(4_000_000_000)),
        ("i32", V::I32(-2_000_000_000)),
        ("f32", V::F32(1.5)),
        ("bool", V::Bool(true)),
        ("string", V::String("llama ✓".into())),
        ("u64", V::U64(u64::MAX)),
        ("i64", V::I64(i64::MIN)),
        ("f64", V::F64(-0.125)),
        ("empty", V::Array(GgufType::U16, vec![])),
        (
            "strings",
            V::Array(
                GgufType::String,
                vec![V::String("a".into()), V::String("".into())],
            ),
        ),
        (
            "floats",
            V::Array(GgufType::F32, vec![V::F32(1.0), V::F32(-2.0)]),
        ),
        (
            "nested",
            V::Array(
                GgufType::Array,
                vec![V::Array(GgufType::I8, vec![V::I8(1), V::I8(-1)])],
            ),
        ),
        ("general.alignment", V::U32(64)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let d = dir();
    let path = d.path().join("meta.gguf");
    let arrays = Arrays::from([("w".to_string(), sample(&[3, 64], DType::Float16)?)]);
    io::save_gguf(&path, &arrays, &meta)?;
    let (back, m) = io::gguf::load(&path)?;
    assert_eq!(m, meta);
    assert!(equal(&arrays["w"], &back["w"]));
    // A mistyped array is refused on save.
    let bad = BTreeMap::from([("x".to_string(), V::Array(GgufType::U8, vec![V::I8(1)]))]);
    assert!(io::save_gguf(d.path().join("b.gguf"), &arrays, &bad).is_err());
    Ok(())
}

#[test]
fn non_contiguous_arrays_save_in_row_major_order() -> Result<()> {
    let d = dir();
    let a = sample(&[2, 3], DType::Int32)?.transpose(None)?;
    let b = ferrox::broadcast_to(&sample(&[2], DType::Float32)?, &[4, 2])?;
    for (name, x) in [("t", &a), ("b", &b)] {
        io::save(d.path().join(format!("{name}.npy")), x)?;
        let arrays = Arrays::from([(name.to_string(), x.clone())]);
        io::save_safetensors(d.path().join(format!("{name}.safetensors")), &arrays, None)?;
        io::save_gguf(
            d.path().join(format!("{name}.gguf")),
            &arrays,
            &BTreeMap::new(),
        )?;
        for ext in ["npy", "safetensors", "gguf"] {
            let back = io::load(d.path().join(format!("{name}.{ext}")), None)?.into_arrays();
            let y = back.values().next().expect("one array");
            assert!(equal(x, y), "{name}.{ext}");
        }
    }
    Ok(())
}

#[test]
fn large_files_are_mapped_and_their_tensors_are_views() -> Result<()> {
    let d = dir();
    // 2 MiB: over the mapping threshold.
    let a = sample(&[512, 1024], DType::Float32)?;
    let path = d.path().join("big.safetensors");
    io::save_safetensors(&path, &Arrays::from([("a".to_string(), a.clone())]), None)?;
    let before = ferrox::get_active_memory();
    let back = io::load(&path, None)?.into_arrays();
    // A view: evaluated, no primitive, and no buffer allocated for it.
    assert!(back["a"].primitive().is_none());
    assert!(ferrox::get_active_memory() < before + (1 << 20));
    assert!(equal(&a, &back["a"]));
    Ok(())
}

#[test]
fn bytes_in_memory_load_like_files() -> Result<()> {
    let a = sample(&[3, 4], DType::BFloat16)?;
    let arrays = Arrays::from([("a".to_string(), a.clone())]);
    let mut st = vec![];
    io::safetensors::write(&mut st, &arrays, None)?;
    let back = io::load_bytes(&st, Format::Safetensors, "<memory>")?.into_arrays();
    assert!(equal(&a, &back["a"]));
    let mut npy = vec![];
    io::npy::write(&mut npy, &a)?;
    let back = io::load_bytes(&npy, Format::Npy, "<memory>")?.into_arrays();
    assert!(equal(&a, &back[""]));
    Ok(())
}

/// numpy's big-endian and Fortran-order files load right (built by hand:
/// ferrox writes neither).
#[test]
fn npy_big_endian_and_fortran_order() -> Result<()> {
    fn npy(descr: &str, fortran: bool, shape: &str, data: &[u8]) -> Vec<u8> {
        let mut dict = format!(
            "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}",
            if fortran { "True" } else { "False" }
        );
        while (10 + dict.len() + 1) % 64 != 0 {
            dict.push(' ');
        }
        dict.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend((dict.len() as u16).to_le_bytes());
        out.extend(dict.as_bytes());
        out.extend(data);
        out
    }
    let be: Vec<u8> = [1i32, -2, 3].iter().flat_map(|v| v.to_be_bytes()).collect();
    let a = io::load_bytes(&npy(">i4", false, "(3,)", &be), Format::Npy, "be")?.into_arrays();
    assert_eq!(a[""].to_vec::<i32>()?, vec![1, -2, 3]);
    let c: Vec<u8> = [1.0f32, 2.0, -3.0, 4.0]
        .iter()
        .flat_map(|v| v.to_be_bytes())
        .collect();
    let a = io::load_bytes(&npy(">c8", false, "(2,)", &c), Format::Npy, "bec")?.into_arrays();
    let v = a[""].to_vec::<ferrox::Complex64>()?;
    assert_eq!((v[1].re, v[1].im), (-3.0, 4.0));
    // Column-major 2x3: memory holds columns [1, 4], [2, 5], [3, 6].
    let f: Vec<u8> = [1i16, 4, 2, 5, 3, 6]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let a = io::load_bytes(&npy("<i2", true, "(2, 3)", &f), Format::Npy, "f")?.into_arrays();
    assert_eq!(a[""].to_vec::<i16>()?, vec![1, 2, 3, 4, 5, 6]);
    // Bools other than 0/1 are normalised.
    let a = io::load_bytes(&npy("|b1", false, "(3,)", &[0, 1, 7]), Format::Npy, "b")?.into_arrays();
    assert_eq!(a[""].to_vec::<bool>()?, vec![false, true, true]);
    Ok(())
}

#[test]
fn saving_replaces_atomically_and_keeps_loaded_views_valid() -> Result<()> {
    let d = dir();
    let path = d.path().join("w.safetensors");
    let a = sample(&[512, 1024], DType::Float32)?;
    io::save_safetensors(&path, &Arrays::from([("a".to_string(), a.clone())]), None)?;
    let mapped = io::load(&path, None)?.into_arrays();
    // Overwrite the file the views map; they keep the old contents.
    let z = ferrox::zeros(&[4], DType::Float32)?;
    io::save_safetensors(&path, &Arrays::from([("a".to_string(), z)]), None)?;
    assert!(equal(&a, &mapped["a"]));
    assert_eq!(io::load(&path, None)?.into_arrays()["a"].shape(), &[4]);
    // A failed save leaves no temporary files and the old file intact.
    let bad = Arrays::from([("x".to_string(), sample(&[2], DType::Bool)?)]);
    assert!(io::save_gguf(d.path().join("w.gguf"), &bad, &BTreeMap::new()).is_err());
    let names: Vec<_> = std::fs::read_dir(d.path())
        .expect("listing")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    Ok(())
}

#[test]
fn missing_files_and_unknown_formats_are_named() {
    let err = io::load(Path::new("/nonexistent/x.npy"), None).unwrap_err();
    assert_eq!(err.kind(), ferrox::ErrorKind::NotFound);
    assert!(err.to_string().contains("/nonexistent/x.npy"), "{err}");
    let err = io::load(Path::new("x.pt"), None).unwrap_err();
    assert_eq!(err.kind(), ferrox::ErrorKind::Value);
    let err = io::save(Path::new("/nonexistent/dir/x.npy"), &Array::scalar(1i32)).unwrap_err();
    assert_eq!(err.kind(), ferrox::ErrorKind::NotFound);
}
