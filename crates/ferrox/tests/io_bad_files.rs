//! Bad files are errors naming the file and the bad value: never a panic,
//! a hang or an allocation the file does not justify.

use ferrox::io::{self, Arrays, Format};
use ferrox::{DType, ErrorKind};
use std::collections::BTreeMap;

fn load(bytes: &[u8], format: Format) -> ferrox::Result<Arrays> {
    let arrays = io::load_bytes(bytes, format, "bad")?.into_arrays();
    for a in arrays.values() {
        a.eval()?;
    }
    Ok(arrays)
}

fn fails(bytes: &[u8], format: Format, needle: &str) {
    match load(bytes, format) {
        Ok(_) => panic!("{format:?} file loaded; expected an error with {needle:?}"),
        Err(e) => assert!(
            e.to_string().contains(needle),
            "{format:?}: {e} does not mention {needle:?}"
        ),
    }
}

fn good_npy() -> Vec<u8> {
    let mut v = vec![];
    io::npy::write(&mut v, &ferrox::ones(&[4, 4], DType::Float32).unwrap()).unwrap();
    v
}

fn npy_with(header: &str) -> Vec<u8> {
    let mut v = b"\x93NUMPY\x01\x00".to_vec();
    v.extend((header.len() as u16).to_le_bytes());
    v.extend(header.as_bytes());
    v
}

#[test]
fn bad_npy_files() {
    let good = good_npy();
    fails(&good[..5], Format::Npy, "magic");
    fails(&good[..20], Format::Npy, "truncated header");
    let mut v = good.clone();
    v[6] = 9;
    fails(&v, Format::Npy, "version 9");
    fails(
        &npy_with("{'descr': '<c16', 'fortran_order': False, 'shape': (2,), }"),
        Format::Npy,
        "<c16",
    );
    fails(
        &npy_with(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }",
        ),
        Format::Npy,
        "too many elements",
    );
    fails(
        &npy_with("{'descr': '<f4', 'shape': (2,)}"),
        Format::Npy,
        "fortran_order",
    );
    // Truncated data loads (as in MLX) and fails when evaluated.
    let short = &good[..good.len() - 8];
    let a = io::load_bytes(short, Format::Npy, "short")
        .unwrap()
        .into_arrays();
    let err = a[""].eval().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Runtime);
    assert!(err.to_string().contains("truncated"), "{err}");
}

fn st(header: &str, data: usize) -> Vec<u8> {
    let mut v = (header.len() as u64).to_le_bytes().to_vec();
    v.extend(header.as_bytes());
    v.extend(vec![0u8; data]);
    v
}

#[test]
fn bad_safetensors_files() {
    fails(&[1, 2, 3], Format::Safetensors, "bad header");
    let mut huge = u64::MAX.to_le_bytes().to_vec();
    huge.extend(b"{}");
    fails(&huge, Format::Safetensors, "bad header");
    let mut past = 1000u64.to_le_bytes().to_vec();
    past.extend(b"{}");
    fails(&past, Format::Safetensors, "bad header");
    fails(&st("not json", 0), Format::Safetensors, "bad header");
    // Out of bounds, overlapping, past the end, inconsistent with the shape.
    fails(
        &st(
            r#"{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#,
            8,
        ),
        Format::Safetensors,
        "bad header",
    );
    fails(
        &st(
            r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}"#,
            12,
        ),
        Format::Safetensors,
        "bad header",
    );
    fails(
        &st(
            r#"{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#,
            8,
        ),
        Format::Safetensors,
        "bad header",
    );
    fails(
        &st(
            r#"{"a":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}}"#,
            8,
        ),
        Format::Safetensors,
        "bad header",
    );
    fails(
        &st(
            r#"{"a":{"dtype":"Q9","shape":[2],"data_offsets":[0,8]}}"#,
            8,
        ),
        Format::Safetensors,
        "bad header",
    );
    fails(
        &st(
            r#"{"a":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}}"#,
            1,
        ),
        Format::Safetensors,
        "unsupported dtype",
    );
    // F8 loads as its raw bytes.
    let ok = load(
        &st(
            r#"{"a":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}}"#,
            2,
        ),
        Format::Safetensors,
    )
    .unwrap();
    assert_eq!(ok["a"].dtype(), DType::UInt8);
}

/// A gguf file built field by field.
#[derive(Default)]
struct G(Vec<u8>);

impl G {
    fn header(version: u32, tensors: u64, kvs: u64) -> G {
        let mut g = G(b"GGUF".to_vec());
        g.u32(version).u64(tensors).u64(kvs);
        g
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend(v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend(v.to_le_bytes());
        self
    }
    fn str(&mut self, s: &str) -> &mut Self {
        self.u64(s.len() as u64);
        self.0.extend(s.as_bytes());
        self
    }
    fn tensor(&mut self, name: &str, dims: &[u64], ty: u32, offset: u64) -> &mut Self {
        self.str(name).u32(dims.len() as u32);
        for &d in dims {
            self.u64(d);
        }
        self.u32(ty).u64(offset)
    }
    fn data(&mut self, n: usize) -> Vec<u8> {
        while self.0.len() % 32 != 0 {
            self.0.push(0);
        }
        self.0.extend(vec![0u8; n]);
        self.0.clone()
    }
}

#[test]
fn bad_gguf_files() {
    fails(b"GGUX\x03\0\0\0", Format::Gguf, "magic");
    fails(&G::header(1, 0, 0).data(0), Format::Gguf, "version 1");
    fails(&G::header(4, 0, 0).data(0), Format::Gguf, "version 4");
    fails(&G::header(3, 0, 0).0[..10], Format::Gguf, "truncated");
    fails(
        &G::header(3, 1 << 60, 0).data(0),
        Format::Gguf,
        "tensor count",
    );
    fails(
        &G::header(3, 0, u64::MAX).data(0),
        Format::Gguf,
        "metadata count",
    );
    let mut g = G::header(3, 0, 1);
    g.u64(u64::MAX - 3);
    fails(&g.data(64), Format::Gguf, "key length");
    let mut g = G::header(3, 0, 1);
    g.str("k").u32(9).u32(0).u64(1 << 50);
    fails(&g.data(64), Format::Gguf, "array length");
    let mut g = G::header(3, 0, 1);
    g.str("k").u32(42);
    fails(&g.data(64), Format::Gguf, "unknown value type 42");
    let mut g = G::header(3, 0, 1);
    g.str("k").u32(9);
    for _ in 0..20 {
        g.u32(9).u64(1);
    }
    fails(&g.data(64), Format::Gguf, "nested deeper");
    let mut g = G::header(3, 1, 0);
    g.tensor("t", &[4], 0, 0);
    fails(&g.data(8), Format::Gguf, "past the end");
    let mut g = G::header(3, 1, 0);
    g.tensor("t", &[1 << 32, 1 << 32, 1 << 32], 0, 0);
    fails(&g.data(8), Format::Gguf, "too many elements");
    let mut g = G::header(3, 1, 0);
    g.tensor("t", &[4], 0, u64::MAX - 8);
    fails(&g.data(16), Format::Gguf, "t");
    let mut g = G::header(3, 2, 0);
    g.tensor("a", &[4], 0, 0).tensor("b", &[4], 0, 8);
    fails(&g.data(32), Format::Gguf, "overlap");
    let mut g = G::header(3, 1, 0);
    g.tensor("q", &[32], 11, 0);
    let err = load(&g.data(110), Format::Gguf).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
    let mut g = G::header(3, 1, 0);
    g.tensor("q", &[32], 99, 0);
    fails(&g.data(64), Format::Gguf, "unknown ggml type 99");
    let mut g = G::header(3, 1, 0);
    g.tensor("q", &[31], 8, 0);
    fails(&g.data(64), Format::Gguf, "block");
    let mut g = G::header(3, 1, 0);
    g.tensor("t", &[1; 9], 0, 0);
    fails(&g.data(8), Format::Gguf, "dimensions");
}

#[test]
fn gguf_q8_0_and_q4_0_load_as_mlx_packed_triplets() {
    // Two Q8_0 blocks and one Q4_0 block, scales 0.5.
    let mut g = G::header(3, 2, 0);
    g.tensor("q8.weight", &[32, 2], 8, 0)
        .tensor("q4", &[32], 2, 96);
    let mut bytes = g.data(0);
    let d = half::f16::from_f32(0.5).to_le_bytes();
    let start = bytes.len();
    for b in 0..2 {
        bytes.extend(d);
        bytes.extend((0..32).map(|i| (i as i8 - 16 + b) as u8));
    }
    bytes.resize(start + 96, 0);
    bytes.extend(d);
    bytes.extend((0..16u8).map(|j| j | ((15 - j) << 4)));
    let a = load(&bytes, Format::Gguf).unwrap();
    let names: Vec<&str> = a.keys().map(|k| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "q4",
            "q4.biases",
            "q4.scales",
            "q8.biases",
            "q8.scales",
            "q8.weight"
        ]
    );
    assert_eq!(a["q8.weight"].dtype(), DType::UInt32);
    assert_eq!(a["q8.weight"].shape(), &[2, 8]);
    assert_eq!(a["q8.scales"].shape(), &[2, 1]);
    assert_eq!(a["q8.scales"].dtype(), DType::Float16);
    // dequantize takes matrices: the 1-D q4 is one row.
    let row = |k: &str| {
        a[k].reshape(&[-1, *a[k].shape().last().unwrap() as isize])
            .unwrap()
    };
    let deq = |w: &str, p: &str, bits: usize| {
        ferrox::dequantize(
            &row(w),
            &row(&format!("{p}.scales")),
            Some(&row(&format!("{p}.biases"))),
            Some(32),
            Some(bits),
            "affine",
            None,
            Some(DType::Float32),
        )
        .unwrap()
        .to_vec::<f32>()
        .unwrap()
    };
    let q8 = deq("q8.weight", "q8", 8);
    assert_eq!((q8[0], q8[31], q8[32]), (-8.0, 7.5, -7.5));
    let q4 = deq("q4", "q4", 4);
    assert_eq!((q4[0], q4[15], q4[16], q4[31]), (-4.0, 3.5, 3.5, -4.0));
}

#[test]
fn bad_npz_files() {
    fails(b"PK\x03\x04 not really", Format::Npz, "zip");
    fails(&[0u8; 100], Format::Npz, "zip");
    // A valid zip whose member is not an npy file.
    let mut cur = std::io::Cursor::new(vec![]);
    {
        let mut z = zip_writer(&mut cur);
        z.start_file("x.npy", zip::write::SimpleFileOptions::default())
            .unwrap();
        std::io::Write::write_all(&mut z, b"hello").unwrap();
        z.finish().unwrap();
    }
    fails(cur.get_ref(), Format::Npz, "magic");
    // Truncating a real archive anywhere is an error.
    let mut arrays = Arrays::new();
    arrays.insert("a".into(), ferrox::ones(&[64], DType::Int32).unwrap());
    let mut cur = std::io::Cursor::new(vec![]);
    io::npz::write(&mut cur, &arrays, true).unwrap();
    let full = cur.into_inner();
    for cut in [1, 30, full.len() / 2, full.len() - 1] {
        assert!(load(&full[..cut], Format::Npz).is_err(), "cut at {cut}");
    }
}

fn zip_writer<W: std::io::Write + std::io::Seek>(w: W) -> zip::ZipWriter<W> {
    zip::ZipWriter::new(w)
}

#[test]
fn bad_metadata_on_save() {
    let d = tempfile::tempdir().unwrap();
    let arrays = Arrays::from([("a".to_string(), ferrox::ones(&[2], DType::Float32).unwrap())]);
    let meta = BTreeMap::from([("general.alignment".to_string(), io::GgufValue::U32(3))]);
    let err = io::save_gguf(d.path().join("x.gguf"), &arrays, &meta).unwrap_err();
    assert!(err.to_string().contains("power-of-two"), "{err}");
}
