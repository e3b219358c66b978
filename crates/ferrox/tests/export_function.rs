//! Exported functions: round trips of many primitives against the original
//! function on random inputs, several traces per file, shapeless traces,
//! keyword inputs, threads sharing one import, and bad files (errors, never
//! panics).

// `&[x.clone()]` reads better than `std::slice::from_ref(&x)` in tests.
#![allow(clippy::cloned_ref_to_slice_refs)]

mod common;

use ferrox::io::function::{
    self, FunctionExporter, Kwargs, export_function, exporter, import_function,
    import_function_bytes,
};
use ferrox::{Array, DType, Result, random};
use std::sync::Arc;

type F = Arc<dyn Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync>;

fn randn(shape: &[usize], seed: u64) -> Array {
    let k = random::key(seed).unwrap();
    random::normal(shape, DType::Float32, 0.0, 1.0, Some(&k)).unwrap()
}

fn idx(v: &[i32], shape: &[usize]) -> Array {
    Array::from_slice(v, shape).unwrap()
}

fn close(a: &Array, b: &Array) -> bool {
    a.shape() == b.shape()
        && a.dtype() == b.dtype()
        && ferrox::allclose(
            &a.astype(DType::Float64).unwrap(),
            &b.astype(DType::Float64).unwrap(),
            1e-5,
            1e-5,
            true,
        )
        .unwrap()
        .item::<bool>()
        .unwrap()
}

fn no_kwargs(f: F) -> impl Fn(&[Array], &Kwargs) -> Result<Vec<Array>> + Send + Sync + 'static {
    move |xs: &[Array], _: &Kwargs| f(xs)
}

/// Exports `f` on `inputs`, imports it, and compares with `f` on `inputs`
/// and on `fresh` (other values, same shapes).
fn round_trip(name: &str, f: F, inputs: Vec<Array>, fresh: Vec<Array>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{name}.fxfn"));
    export_function(
        &path,
        no_kwargs(f.clone()),
        &inputs,
        &Kwargs::new(),
        false,
        "",
    )
    .unwrap_or_else(|e| panic!("{name}: export: {e}"));
    let g = import_function(&path).unwrap_or_else(|e| panic!("{name}: import: {e}"));
    for xs in [inputs, fresh] {
        let want = f(&xs).unwrap();
        let got = g
            .call(&xs, &Kwargs::new())
            .unwrap_or_else(|e| panic!("{name}: call: {e}"));
        assert_eq!(want.len(), got.len(), "{name}");
        for (w, g) in want.iter().zip(&got) {
            assert!(close(w, g), "{name}: {w:?} vs {g:?}");
        }
    }
}

macro_rules! case {
    ($name:ident, [$($shape:expr),*], |$xs:ident| $body:expr) => {
        #[test]
        fn $name() {
            let shapes: Vec<Vec<usize>> = vec![$($shape.to_vec()),*];
            let mk = |s: u64| shapes.iter().enumerate().map(|(i, sh)| randn(sh, s + i as u64)).collect::<Vec<_>>();
            let f: F = Arc::new(|$xs: &[Array]| -> Result<Vec<Array>> { $body });
            round_trip(stringify!($name), f, mk(1), mk(100));
        }
    };
}

case!(unary_chain, [[5]], |xs| {
    let y = ferrox::abs(&ferrox::sin(&xs[0])?)?.sqrt()?.exp()?.log1p()?;
    Ok(vec![ferrox::tanh(&y)?])
});
case!(binary_broadcast, [[3, 1], [4]], |xs| Ok(vec![
    ferrox::maximum(&(&xs[0] * &xs[1])?, &(&xs[1] - 0.5)?)?,
    ferrox::greater(&xs[0], &xs[1])?,
    ferrox::power(&ferrox::abs(&xs[0])?, &xs[1])?,
]));
case!(reductions, [[3, 4]], |xs| Ok(vec![
    ferrox::sum(&xs[0], Some(&[1]), false)?,
    ferrox::mean(&xs[0], None, true)?,
    ferrox::var(&xs[0], Some(&[0]), false, 1)?,
    ferrox::max(&xs[0], Some(&[-1]), false)?,
    ferrox::argmax(&xs[0], Some(0), false)?,
    ferrox::prod(&xs[0], Some(&[0, 1]), false)?,
]));
case!(matmul_addmm, [[2, 3, 4], [4, 5], [5]], |xs| Ok(vec![
    ferrox::matmul(&xs[0], &xs[1])?,
    ferrox::addmm(&xs[2], &ferrox::reshape(&xs[0], &[6, 4])?, &xs[1], 0.5, 2.0)?,
]));
case!(views, [[2, 3, 4]], |xs| {
    let x = &xs[0];
    let t = ferrox::transpose(x, Some(&[2, 0, 1]))?;
    let r = ferrox::reshape(&t, &[4, -1])?;
    let s = ferrox::slice(x, &[0, 2, 3], &[2, 0, 0], &[1, -1, -2])?;
    let b = ferrox::broadcast_to(&ferrox::sum(x, Some(&[0]), true)?, &[5, 3, 4])?;
    let f = ferrox::flatten(x, 1, 2)?;
    let e = ferrox::expand_dims(
        &ferrox::squeeze(&ferrox::reshape(x, &[1, 24])?, None)?,
        &[0],
    )?;
    Ok(vec![(&r * 2.0)?, s, b, f, e, ferrox::contiguous(&t)?])
});
case!(concatenate_pad_tril, [[2, 3], [2, 3]], |xs| Ok(vec![
    ferrox::concatenate(&xs[..2], 1)?,
    ferrox::pad(&xs[0], &[(1, 0), (0, 2)], ferrox::PadMode::Constant(3.0))?,
    ferrox::tril(&xs[1], 0)?,
    ferrox::triu(&xs[1], 1)?,
    ferrox::r#where(&ferrox::greater(&xs[0], &xs[1])?, &xs[0], &xs[1])?,
]));
case!(softmax_logsumexp, [[3, 5]], |xs| Ok(vec![
    ferrox::softmax(&xs[0], Some(&[-1]), false)?,
    ferrox::logsumexp(&xs[0], Some(&[0]), true)?,
]));
case!(sort_scan_cast, [[4, 3]], |xs| Ok(vec![
    ferrox::sort(&xs[0], Some(0))?,
    ferrox::argsort(&xs[0], Some(1))?,
    ferrox::cumsum(&xs[0], Some(1), false, true)?,
    xs[0].astype(DType::Float16)?,
    xs[0].astype(DType::Int32)?,
]));
case!(fast_norms_rope_attention, [[1, 2, 3, 8], [8], [8]], |xs| {
    let x = &xs[0];
    let off = Array::from(2i32);
    Ok(vec![
        ferrox::fast::rms_norm(x, Some(&xs[1]), 1e-5)?,
        ferrox::fast::layer_norm(x, Some(&xs[1]), Some(&xs[2]), 1e-5)?,
        ferrox::fast::rope(
            x,
            8,
            false,
            Some(10000.0),
            1.0,
            ferrox::fast::RopeOffset::Array(&off),
            None,
        )?,
        ferrox::fast::scaled_dot_product_attention(
            x,
            x,
            x,
            0.3,
            ferrox::fast::AttentionMask::Causal,
            None,
        )?,
    ])
});
case!(conv, [[1, 6, 6, 3], [4, 3, 3, 3]], |xs| Ok(vec![
    ferrox::conv2d(&xs[0], &xs[1], (2, 1), (1, 1), (1, 1), 1)?
]));

#[test]
fn indexing_ops() {
    let f: F = Arc::new(|xs: &[Array]| {
        let a = &xs[0];
        let i = idx(&[2, 0, 1, 1], &[4]);
        let j = idx(&[0, 1, 2, 0, 1, 2], &[2, 3]);
        let rows = idx(&[1, 0], &[2]);
        Ok(vec![
            ferrox::take(a, &i, Some(0))?,
            ferrox::take_along_axis(a, &j, Some(0))?,
            ferrox::put_along_axis(a, &j, &Array::from(7.0f32), Some(0))?,
            ferrox::gather(a, &[rows.clone()], &[0], &[1, 3])?,
            ferrox::scatter_add(
                a,
                &[rows.clone()],
                &ferrox::ones(&[2, 1, 3], DType::Float32)?,
                &[0],
            )?,
            a.at(&rows)?.add(Array::from(1.0f32))?,
            ferrox::slice_update(
                a,
                &ferrox::zeros(&[2, 1], DType::Float32)?,
                &[0, 1],
                &[2, 2],
                None,
            )?,
        ])
    });
    round_trip(
        "indexing",
        f,
        vec![randn(&[3, 3], 1)],
        vec![randn(&[3, 3], 2)],
    );
}

#[test]
fn quantized_matmul() {
    let w = randn(&[8, 64], 3);
    let (wq, s, b) = ferrox::quantize(&w, Some(32), Some(4), "affine", None).unwrap();
    let f: F = Arc::new(move |xs: &[Array]| {
        let y = ferrox::quantized_matmul(
            &xs[0],
            &wq,
            &s,
            b.as_ref(),
            true,
            Some(32),
            Some(4),
            "affine",
        )?;
        Ok(vec![ferrox::maximum(&y, &Array::from(0.0f32))?])
    });
    round_trip("qmm", f, vec![randn(&[2, 64], 1)], vec![randn(&[2, 64], 9)]);
}

#[test]
fn random_with_a_key_input_and_divmod() {
    let f: F = Arc::new(|xs: &[Array]| {
        let key = &xs[1];
        let u = random::uniform(0.0, 1.0, &[4], DType::Float32, Some(key))?;
        let n = random::normal(&[4], DType::Float32, 0.0, 1.0, Some(key))?;
        let (q, r) = ferrox::divmod(&xs[0], &Array::from(0.3f32))?;
        Ok(vec![u, n, q, r])
    });
    let x = randn(&[4], 5);
    round_trip(
        "random",
        f,
        vec![x.clone(), random::key(1).unwrap()],
        vec![x, random::key(7).unwrap()],
    );
}

#[test]
fn draws_without_a_key_export_the_keys_of_the_export() -> Result<()> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("keyless.fxfn");
    let draw = || random::uniform(0.0, 1.0, &[3], DType::Float32, None);
    random::seed(5);
    export_function(
        &path,
        move |_: &[Array], _: &Kwargs| Ok(vec![draw()?]),
        &[],
        &Kwargs::new(),
        false,
        "",
    )?;
    let imported = import_function(&path)?;
    let (a, b) = (
        imported.call(&[], &Kwargs::new())?,
        imported.call(&[], &Kwargs::new())?,
    );
    random::seed(5);
    let want = draw()?.to_vec::<f32>()?;
    assert_eq!(a[0].to_vec::<f32>()?, want);
    assert_eq!(b[0].to_vec::<f32>()?, want);
    Ok(())
}

#[test]
fn constants_and_a_function_without_inputs() {
    let c = randn(&[3, 3], 4);
    let c2 = c.clone();
    let f: F =
        Arc::new(move |_: &[Array]| Ok(vec![c2.clone(), ferrox::zeros(&[2], DType::Int32)?]));
    round_trip("no_inputs", f, vec![], vec![]);
    let f: F = Arc::new(move |xs: &[Array]| Ok(vec![(&xs[0] + &c)?]));
    round_trip(
        "captured",
        f,
        vec![randn(&[3, 3], 1)],
        vec![randn(&[3, 3], 2)],
    );
}

#[test]
fn several_traces_keywords_and_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("multi.fxfn");
    let big = ferrox::zeros(&[64, 64], DType::Float32).unwrap();
    big.eval().unwrap();
    let mut ex: FunctionExporter = exporter(
        &path,
        move |xs: &[Array], kw: &Kwargs| {
            let mut s = big.clone();
            for x in xs.iter().chain(kw.values()) {
                s = (&s + x)?;
            }
            Ok(vec![s])
        },
        false,
        "{\"model\": 1}",
    );
    let one = ferrox::ones(&[1], DType::Float32).unwrap();
    for n in 0..4 {
        ex.call(&vec![one.clone(); n], &Kwargs::new()).unwrap();
    }
    let kw = Kwargs::from([("z".to_string(), one.clone())]);
    ex.call(&[one.clone()], &kw).unwrap();
    // The same signature twice is refused.
    assert!(ex.call(&[one.clone()], &Kwargs::new()).is_err());
    ex.close();
    assert!(
        ex.call(
            &[
                one.clone(),
                one.clone(),
                one.clone(),
                one.clone(),
                one.clone()
            ],
            &Kwargs::new()
        )
        .is_err()
    );
    // The one captured constant is stored once for all five traces.
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size < 64 * 64 * 4 + 8192, "{size} bytes");
    let g = import_function(&path).unwrap();
    assert_eq!(g.traces(), 5);
    assert_eq!(g.metadata(), "{\"model\": 1}");
    for n in 0..4 {
        let y = g.call(&vec![one.clone(); n], &Kwargs::new()).unwrap();
        assert_eq!(y[0].to_vec::<f32>().unwrap(), vec![n as f32; 64 * 64]);
    }
    assert_eq!(
        g.call(&[one.clone()], &kw).unwrap()[0]
            .to_vec::<f32>()
            .unwrap()[0],
        2.0
    );
    // Wrong keyword, count, shape or dtype: a value error naming the call.
    let e = g
        .call(
            &[one.clone()],
            &Kwargs::from([("y".to_string(), one.clone())]),
        )
        .unwrap_err();
    assert_eq!(e.kind(), ferrox::ErrorKind::Value);
    assert!(
        g.call(
            &[ferrox::ones(&[2], DType::Float32).unwrap()],
            &Kwargs::new()
        )
        .is_err()
    );
    assert!(
        g.call(&[ferrox::ones(&[1], DType::Int32).unwrap()], &Kwargs::new())
            .is_err()
    );
}

#[test]
fn shapeless_traces_replay_at_other_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shapeless.fxfn");
    let w = randn(&[8, 3], 2);
    let f = move |xs: &[Array], _: &Kwargs| {
        let h = ferrox::matmul(&xs[0], &w)?;
        Ok(vec![ferrox::softmax(
            &ferrox::exp(&(&h * 0.5)?)?,
            Some(&[-1]),
            false,
        )?])
    };
    let f2 = f.clone();
    export_function(&path, f, &[randn(&[1, 4, 8], 1)], &Kwargs::new(), true, "").unwrap();
    let g = import_function(&path).unwrap();
    assert!(g.shapeless());
    for (i, shape) in [[1, 4, 8], [2, 7, 8], [3, 1, 8]].iter().enumerate() {
        let x = randn(shape, 10 + i as u64);
        let want = f2(&[x.clone()], &Kwargs::new()).unwrap();
        let got = g.call(&[x], &Kwargs::new()).unwrap();
        assert!(close(&want[0], &got[0]), "{shape:?}");
    }
    // A different rank matches no trace.
    assert!(g.call(&[randn(&[4, 8], 1)], &Kwargs::new()).is_err());
}

#[test]
fn elementwise_chains_are_fused_again_on_import() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fused.fxfn");
    let f = |xs: &[Array], _: &Kwargs| Ok(vec![ferrox::exp(&ferrox::sin(&(&xs[0] * 2.0)?)?)?]);
    export_function(&path, f, &[randn(&[16], 1)], &Kwargs::new(), false, "").unwrap();
    let g = import_function(&path).unwrap();
    assert_eq!(g.op_names(), vec![vec!["fused"]]);
}

#[test]
fn unsupported_primitives_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("svd.fxfn");
    let f = |xs: &[Array], _: &Kwargs| Ok(vec![ferrox::linalg::svd(&xs[0], false)?[0].clone()]);
    let e = export_function(&path, f, &[randn(&[3, 3], 1)], &Kwargs::new(), false, "").unwrap_err();
    assert_eq!(e.kind(), ferrox::ErrorKind::Unsupported);
    assert!(
        e.to_string().contains("export of svd is not supported"),
        "{e}"
    );
    assert!(!path.exists());
}

#[test]
fn every_kind_is_listed_once() {
    let kinds = function::exportable_kinds();
    let mut dedup = kinds.clone();
    dedup.dedup();
    assert_eq!(kinds, dedup);
    assert!(kinds.len() >= 40, "{kinds:?}");
}

#[test]
fn threads_share_one_import() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("threads.fxfn");
    let f = |xs: &[Array], _: &Kwargs| Ok(vec![ferrox::tanh(&ferrox::matmul(&xs[0], &xs[0])?)?]);
    export_function(&path, f, &[randn(&[8, 8], 1)], &Kwargs::new(), false, "").unwrap();
    let g = import_function(&path).unwrap();
    let x = randn(&[8, 8], 3);
    let want = g.call(&[x.clone()], &Kwargs::new()).unwrap()[0]
        .to_vec::<f32>()
        .unwrap();
    let barrier = Arc::new(std::sync::Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let (g, x, b) = (g.clone(), x.clone(), barrier.clone());
            std::thread::spawn(move || {
                b.wait();
                (0..20)
                    .map(|_| {
                        g.call(&[x.clone()], &Kwargs::new()).unwrap()[0]
                            .to_vec::<f32>()
                            .unwrap()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for h in handles {
        for got in common::join_within(60, h) {
            assert_eq!(got, want);
        }
    }
}

// ------------------------------------------------------------- bad files

fn exported_bytes() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ok.fxfn");
    let c = randn(&[2], 9);
    c.eval().unwrap(); // stored, not exported as the graph that samples it
    let f = move |xs: &[Array], _: &Kwargs| {
        Ok(vec![ferrox::transpose(&(&xs[0] + &c)?, Some(&[1, 0]))?])
    };
    export_function(&path, f, &[randn(&[3, 2], 1)], &Kwargs::new(), false, "").unwrap();
    std::fs::read(path).unwrap()
}

/// The bytes with the program's JSON edited by `edit` (the header is
/// rewritten with its new length).
fn with_program(bytes: &[u8], edit: impl Fn(&mut serde_json::Value)) -> Vec<u8> {
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let mut header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let program = header["__metadata__"]["ferrox.function"]
        .as_str()
        .unwrap()
        .to_string();
    let mut program: serde_json::Value = serde_json::from_str(&program).unwrap();
    edit(&mut program);
    header["__metadata__"]["ferrox.function"] = serde_json::Value::String(program.to_string());
    let mut json = header.to_string().into_bytes();
    json.resize(json.len().div_ceil(8) * 8, b' ');
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend(json);
    out.extend(&bytes[8 + n..]);
    out
}

fn import_err(bytes: &[u8]) -> String {
    match import_function_bytes(bytes, "<test>") {
        Ok(_) => panic!("a bad file imported"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_files_are_errors() {
    let ok = exported_bytes();
    assert!(import_function_bytes(&ok, "<ok>").is_ok());
    // Truncated, and not a safetensors file at all.
    assert!(import_function_bytes(&ok[..ok.len() - 3], "<t>").is_err());
    assert!(import_function_bytes(b"garbage", "<t>").is_err());
    // A plain safetensors file without a program.
    let mut st = vec![];
    ferrox::io::safetensors::write(&mut st, &ferrox::io::Arrays::new(), None).unwrap();
    assert!(import_err(&st).contains("not an exported function"));
    // A version from the future.
    let e = import_err(&with_program(&ok, |p| p["version"] = 99.into()));
    assert!(e.contains("unsupported version 99"), "{e}");
    // An unknown primitive.
    let e = import_err(&with_program(&ok, |p| {
        p["traces"][0]["instrs"][0]["op"] = "warp_drive".into()
    }));
    assert!(
        e.contains("warp_drive") && e.contains("not supported"),
        "{e}"
    );
    // Parameters that lie: a permutation out of range, a repeated axis.
    let e = import_err(&with_program(&ok, |p| {
        p["traces"][0]["instrs"][1]["params"]["axes"] = serde_json::json!([5, 0])
    }));
    assert!(e.contains("transpose"), "{e}");
    let e = import_err(&with_program(&ok, |p| {
        p["traces"][0]["instrs"][1]["params"]["axes"] = serde_json::json!([0, 0])
    }));
    assert!(e.contains("transpose"), "{e}");
    // Operands that refer to nothing, a missing constant, a shape that lies.
    assert!(
        import_err(&with_program(
            &ok,
            |p| p["traces"][0]["instrs"][0]["inputs"][0] = serde_json::json!({"input": 7})
        ))
        .contains("refers to nothing")
    );
    assert!(
        import_err(&with_program(
            &ok,
            |p| p["traces"][0]["instrs"][1]["inputs"][0] = serde_json::json!({"node": [5, 0]})
        ))
        .contains("refers to nothing")
    );
    assert!(import_err(&with_program(&ok, |p| p["constants"] = 3.into())).contains("missing"));
    let e = import_err(&with_program(&ok, |p| {
        p["traces"][0]["instrs"][1]["outputs"][0]["shape"] =
            serde_json::json!([1_000_000_000_000u64, 7])
    }));
    assert!(e.contains("the file says"), "{e}");
    // An absurd input signature builds nothing large.
    let e = import_err(&with_program(&ok, |p| {
        p["traces"][0]["args"][0]["shape"] = serde_json::json!([usize::MAX, usize::MAX])
    }));
    assert!(!e.is_empty());
}

#[test]
fn lazy_captured_arrays_export_as_the_graph_that_computes_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lazy.fxfn");
    let big = ferrox::ones(&[64, 64], DType::Float32).unwrap();
    big.eval().unwrap();
    let mut ex = exporter(
        &path,
        move |xs: &[Array], _: &Kwargs| {
            let mut s = (&big + 0.0)?; // not derived from the inputs, not evaluated
            for x in xs {
                s = (&s + x)?;
            }
            Ok(vec![s])
        },
        false,
        "",
    );
    let one = ferrox::ones(&[1], DType::Float32).unwrap();
    ex.call(&[], &Kwargs::new()).unwrap();
    ex.call(std::slice::from_ref(&one), &Kwargs::new()).unwrap();
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(
        size < 64 * 64 * 4 + 8192,
        "{size} bytes: `big` stored twice"
    );
    let g = import_function(&path).unwrap();
    assert_eq!(
        g.call(&[], &Kwargs::new()).unwrap()[0]
            .to_vec::<f32>()
            .unwrap(),
        vec![1.0; 4096]
    );
    assert_eq!(
        g.call(&[one], &Kwargs::new()).unwrap()[0]
            .to_vec::<f32>()
            .unwrap(),
        vec![2.0; 4096]
    );
}

#[test]
fn a_custom_kernel_exports_and_its_import_fails_only_when_run() {
    use ferrox::fast::custom_kernel::{KernelLaunch, KernelPlacement, TemplateArg, metal_kernel};
    let k = metal_kernel(
        "twice",
        &["a"],
        &["out"],
        "out[0] = 2 * a[0];",
        "",
        true,
        false,
        Some("fast"),
    )
    .unwrap();
    let launch = KernelLaunch {
        output_shapes: vec![vec![4]],
        output_dtypes: vec![DType::Float16],
        grid: [4, 1, 1],
        threadgroup: [4, 1, 1],
        template: vec![("T".into(), TemplateArg::Dtype(DType::Float16))],
        init_value: Some(0.5),
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kernel.fxfn");
    let f = move |xs: &[Array], _: &Kwargs| {
        let y = ferrox::exp(&xs[0])?;
        k.call(&[y], &launch, KernelPlacement::Default)
    };
    export_function(&path, f, &[randn(&[4], 1)], &Kwargs::new(), false, "").unwrap();
    let g = import_function(&path).unwrap();
    let ops = &g.op_names()[0];
    assert!(ops.contains(&"metal_kernel"), "{ops:?}");
    // The call builds the outputs lazily; running them needs the back end.
    let out = g.call(&[randn(&[4], 2)], &Kwargs::new()).unwrap();
    let e = out[0].eval().unwrap_err();
    assert_eq!(e.kind(), ferrox::ErrorKind::Runtime);
    assert!(e.to_string().contains("No Metal back-end."), "{e}");
}
