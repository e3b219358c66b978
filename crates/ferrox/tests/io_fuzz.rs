//! Mutated bytes of real files, fed to every loader: the result may be
//! `Ok` or `Err`, never a panic (or an abort from a huge allocation, which
//! would kill the test binary). Loaded arrays are evaluated too, so the
//! lazy decoders (dequantisation, byte swapping) see the mutations.
//! Bounded: 10,000 cases over seven seed files of a few hundred bytes,
//! each tried by all four loaders; about half a second unoptimised.

use ferrox::DType;
use ferrox::io::{self, Arrays, Format, GgufType, GgufValue};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::OnceLock;

fn arrays() -> Arrays {
    let mut a = Arrays::new();
    a.insert("f".into(), ferrox::ones(&[2, 3], DType::Float32).unwrap());
    a.insert("h".into(), ferrox::ones(&[4], DType::Float16).unwrap());
    a.insert("i".into(), ferrox::ones(&[3], DType::Int64).unwrap());
    a
}

fn with_bool_and_complex() -> Arrays {
    let mut a = arrays();
    a.insert("b".into(), ferrox::ones(&[5], DType::Bool).unwrap());
    a.insert("c".into(), ferrox::ones(&[2], DType::Complex64).unwrap());
    a
}

/// One small, valid file per format (gguf with a quantized tensor and
/// every metadata shape, npy big-endian so that byte swapping runs).
fn seeds() -> &'static Vec<(Format, Vec<u8>)> {
    static SEEDS: OnceLock<Vec<(Format, Vec<u8>)>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let mut npy = vec![];
        io::npy::write(&mut npy, &ferrox::ones(&[2, 3], DType::Complex64).unwrap()).unwrap();
        let mut be = npy.clone();
        if let Some(p) = be.windows(3).position(|w| w == b"<c8") {
            be[p] = b'>';
        }
        let mut npz = std::io::Cursor::new(vec![]);
        io::npz::write(&mut npz, &with_bool_and_complex(), true).unwrap();
        let mut npz_stored = std::io::Cursor::new(vec![]);
        io::npz::write(&mut npz_stored, &arrays(), false).unwrap();
        let mut st = vec![];
        let meta = BTreeMap::from([("k".to_string(), "v".to_string())]);
        io::safetensors::write(&mut st, &with_bool_and_complex(), Some(&meta)).unwrap();
        let meta = BTreeMap::from([
            ("s".to_string(), GgufValue::String("x".into())),
            (
                "a".to_string(),
                GgufValue::Array(GgufType::I32, vec![GgufValue::I32(3)]),
            ),
            ("u".to_string(), GgufValue::U8(1)),
        ]);
        let mut gguf = vec![];
        io::gguf::write(&mut gguf, &arrays(), &meta).unwrap();
        vec![
            (Format::Npy, npy),
            (Format::Npy, be),
            (Format::Npz, npz.into_inner()),
            (Format::Npz, npz_stored.into_inner()),
            (Format::Safetensors, st),
            (Format::Gguf, gguf),
            (Format::Gguf, quantized_gguf()),
        ]
    })
}

/// A gguf with one Q4_K and one Q6_K block (random-ish bytes).
fn quantized_gguf() -> Vec<u8> {
    let mut v = b"GGUF".to_vec();
    v.extend(3u32.to_le_bytes());
    v.extend(2u64.to_le_bytes());
    v.extend(0u64.to_le_bytes());
    for (name, ty, offset) in [("k4", 12u32, 0u64), ("k6", 14, 160)] {
        v.extend((name.len() as u64).to_le_bytes());
        v.extend(name.as_bytes());
        v.extend(1u32.to_le_bytes());
        v.extend(256u64.to_le_bytes());
        v.extend(ty.to_le_bytes());
        v.extend(offset.to_le_bytes());
    }
    while v.len() % 32 != 0 {
        v.push(0);
    }
    v.extend((0..400u32).map(|i| (i * 37 % 251) as u8));
    v
}

fn try_load(bytes: &[u8], format: Format) {
    if let Ok(loaded) = io::load_bytes(bytes, format, "fuzz") {
        for a in loaded.into_arrays().values() {
            let _ = a.eval();
        }
    }
}

/// Seed index, byte mutations (position, value), and an optional cut.
fn case() -> impl Strategy<Value = (usize, Vec<(usize, u8)>, Option<usize>)> {
    (
        0..seeds().len(),
        proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
        proptest::option::weighted(0.2, any::<usize>()),
    )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 10_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn mutated_files_never_panic((seed, muts, cut) in case()) {
        let (format, bytes) = &seeds()[seed];
        let mut b = bytes.clone();
        for (pos, val) in muts {
            let i = pos % b.len();
            b[i] = val;
        }
        if let Some(c) = cut {
            b.truncate(c % (b.len() + 1));
        }
        // Every loader, not only the one the bytes were meant for.
        try_load(&b, *format);
        for other in [Format::Npy, Format::Npz, Format::Safetensors, Format::Gguf] {
            if other != *format {
                try_load(&b, other);
            }
        }
    }
}

#[test]
fn every_seed_loads() {
    for (format, bytes) in seeds() {
        let loaded = io::load_bytes(bytes, *format, "seed").unwrap();
        for a in loaded.into_arrays().values() {
            a.eval().unwrap();
        }
    }
}

/// Exported functions (`io::function`): a small file with a constant, a
/// view, a reduction, a gather and a fused chain, and the inputs it takes.
fn function_seed() -> &'static (Vec<u8>, Vec<ferrox::Array>) {
    use ferrox::io::function::{Kwargs, export_function};
    static SEED: OnceLock<(Vec<u8>, Vec<ferrox::Array>)> = OnceLock::new();
    SEED.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.fxfn");
        let c = ferrox::ones(&[2], DType::Float32).unwrap();
        let f = move |xs: &[ferrox::Array], _: &Kwargs| {
            let t = ferrox::transpose(&(&xs[0] + &c)?, Some(&[1, 0]))?;
            let s = ferrox::sum(&t, Some(&[1]), true)?;
            let g = ferrox::take(&xs[0], &xs[1], Some(0))?;
            Ok(vec![ferrox::exp(&(&s * 2.0)?)?, g])
        };
        let inputs = vec![
            ferrox::ones(&[3, 2], DType::Float32).unwrap(),
            ferrox::Array::from_slice(&[2i32, 0], &[2]).unwrap(),
        ];
        export_function(&path, f, &inputs, &Kwargs::new(), false, "m").unwrap();
        (std::fs::read(path).unwrap(), inputs)
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 2_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Mutations land in the header (the JSON program) four times in five:
    /// that is where an importer can be lied to.
    #[test]
    fn mutated_function_files_never_panic(
        muts in proptest::collection::vec((any::<usize>(), any::<u8>(), any::<bool>()), 1..4),
        cut in proptest::option::weighted(0.1, any::<usize>()),
    ) {
        use ferrox::io::function::{Kwargs, import_function_bytes};
        let (bytes, inputs) = function_seed();
        let header = 8 + u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        let mut b = bytes.clone();
        for (pos, val, in_header) in muts {
            let i = if in_header { 8 + pos % (header - 8) } else { pos % b.len() };
            b[i] = val;
        }
        if let Some(c) = cut {
            b.truncate(c % (b.len() + 1));
        }
        if let Ok(f) = import_function_bytes(&b, "fuzz") {
            if let Ok(outs) = f.call(inputs, &Kwargs::new()) {
                for o in outs {
                    let _ = o.eval();
                }
            }
        }
    }
}

#[test]
fn the_function_seed_imports() {
    let (bytes, inputs) = function_seed();
    let f = ferrox::io::function::import_function_bytes(bytes, "seed").unwrap();
    let outs = f.call(inputs, &Default::default()).unwrap();
    assert_eq!(outs[1].to_vec::<f32>().unwrap(), vec![1.0; 4]);
}
