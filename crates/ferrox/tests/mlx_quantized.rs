//! ferrox's quantization against mlx 0.32.4 (fixtures written by
//! `fixtures/gen_quantized.py`): ferrox quantizes every fixture weight to
//! the same packed codes and the same scales and biases as mlx, bit for
//! bit; dequantizes mlx's packed weights to the same values, bit for bit;
//! and multiplies by them to the same products (to the rounding of a
//! different summation order: ferrox accumulates in float32).

mod common;

use common::{Case, Tensor, array, assert_matches, load};
use ferrox::{Array, DType, dequantize, gather_qmm, quantize, quantized_matmul};

fn param_usize(c: &Case, key: &str) -> usize {
    c.params[key].as_u64().expect(key) as usize
}

fn mode(c: &Case) -> String {
    c.params["mode"].as_str().expect("mode").to_string()
}

fn codes(a: &Array, bits: usize) -> Vec<u32> {
    let words = a.to_vec::<u32>().expect("words");
    let n = words.len() * 32 / bits;
    (0..n)
        .map(|i| {
            let p = i * bits;
            let (w, s) = (p / 32, p % 32);
            let mut v = (words[w] as u64) >> s;
            if s + bits > 32 {
                v |= (words[w + 1] as u64) << (32 - s);
            }
            (v as u32) & ((1u32 << bits) - 1)
        })
        .collect()
}

fn f64s(a: &Array) -> Vec<f64> {
    common::values(a).0
}

/// ferrox's scales/biases equal mlx's (the tolerance only absorbs the
/// JSON parser's last f64 bit; a float32 ulp is 2^-23).
fn assert_same(name: &str, got: &Array, want: &Tensor) {
    assert_eq!(got.shape(), &want.shape[..], "{name}: shape");
    assert_eq!(got.dtype(), want.dtype, "{name}: dtype");
    for (i, (&g, &w)) in f64s(got).iter().zip(&want.data).enumerate() {
        assert!(
            (g - w).abs() <= 1e-12 * w.abs(),
            "{name}: element {i}: got {g}, want {w}"
        );
    }
}

#[test]
fn quantize_matches_mlx_bit_for_bit() {
    let cases = load("quantized.json");
    let mut n = 0;
    for c in cases.iter().filter(|c| c.op == "quantize") {
        let (gs, bits, m) = (
            param_usize(c, "group_size"),
            param_usize(c, "bits"),
            mode(c),
        );
        let w = array(&c.inputs[0]);
        let (wq, s, b) = quantize(&w, Some(gs), Some(bits), &m, None).expect(&c.name);
        let want_q = array(&c.inputs[1]);
        assert_eq!(wq.shape(), want_q.shape(), "{}: w_q shape", c.name);
        assert_eq!(wq.dtype(), DType::UInt32, "{}", c.name);
        let (gq, wqv) = (codes(&wq, bits), codes(&want_q, bits));
        for (i, (&g, &e)) in gq.iter().zip(&wqv).enumerate() {
            assert_eq!(g, e, "{}: code {i}", c.name);
        }
        if m == "affine" {
            assert_same(&format!("{} scales", c.name), &s, &c.inputs[2]);
            let b = b.expect("biases");
            assert_same(&format!("{} biases", c.name), &b, &c.inputs[3]);
        } else {
            assert!(b.is_none(), "{}", c.name);
            assert_eq!(
                s.to_vec::<u8>().expect("scales"),
                c.inputs[2]
                    .data
                    .iter()
                    .map(|&v| v as u8)
                    .collect::<Vec<_>>(),
                "{}: scales",
                c.name
            );
        }
        n += 1;
    }
    assert_eq!(n, 33, "quantize cases");
}

#[test]
fn dequantize_of_mlx_weights_matches_mlx() {
    for c in load("quantized.json").iter().filter(|c| c.op == "quantize") {
        let (gs, bits, m) = (
            param_usize(c, "group_size"),
            param_usize(c, "bits"),
            mode(c),
        );
        let wq = array(&c.inputs[1]);
        let s = array(&c.inputs[2]);
        let b = (m == "affine").then(|| array(&c.inputs[3]));
        let dtype = c.output.dtype;
        let got = dequantize(
            &wq,
            &s,
            b.as_ref(),
            Some(gs),
            Some(bits),
            &m,
            None,
            Some(dtype),
        )
        .expect(&c.name);
        // Exact: the tolerance only absorbs the JSON parser's last f64 bit.
        assert_matches(&c.name, &got, &c.output, 1e-12, 0.0);
    }
}

#[test]
fn quantized_matmul_of_mlx_weights_matches_mlx() {
    let cases = load("quantized.json");
    let mut n = 0;
    for c in cases
        .iter()
        .filter(|c| c.op == "qmm" || c.op == "gather_qmm")
    {
        let (gs, bits, m) = (
            param_usize(c, "group_size"),
            param_usize(c, "bits"),
            mode(c),
        );
        let transpose = c.params["transpose"].as_bool().expect("transpose");
        let x = array(&c.inputs[0]);
        let wq = array(&c.inputs[1]);
        let s = array(&c.inputs[2]);
        let affine = m == "affine";
        let b = affine.then(|| array(&c.inputs[3]));
        let got = if c.op == "qmm" {
            quantized_matmul(&x, &wq, &s, b.as_ref(), transpose, Some(gs), Some(bits), &m)
        } else {
            let k = if affine { 4 } else { 3 };
            let (li, ri) = (array(&c.inputs[k]), array(&c.inputs[k + 1]));
            gather_qmm(
                &x,
                &wq,
                &s,
                b.as_ref(),
                Some(&li),
                Some(&ri),
                transpose,
                Some(gs),
                Some(bits),
                &m,
                false,
            )
        }
        .expect(&c.name);
        // mlx sums in the input's dtype in places where ferrox sums in
        // float32: half precision results may differ by a few of their ulps.
        let scale = c
            .output
            .data
            .iter()
            .fold(0f64, |a, &v| a.max(v.abs()))
            .max(1.0);
        let atol = match c.output.dtype {
            DType::Float32 => 2e-5 * scale,
            DType::Float16 => 4e-3 * scale,
            _ => 3e-2 * scale,
        };
        assert_matches(&c.name, &got, &c.output, 0.0, atol);
        n += 1;
    }
    assert_eq!(n, 62, "product cases");
}

/// Batches of empty weights (no rows, or no values per row) multiply like
/// float matmuls of the same shapes: an empty product, or zeros when the
/// contracted axis is empty. An empty operand's strides may step past its
/// (empty) data; no batch entry may index by them.
#[test]
fn quantized_matmul_of_empty_weights_is_empty_or_zero() {
    // (w shape, x shape, transpose, expected output shape)
    type Shapes = &'static [usize];
    let cases: [(Shapes, Shapes, bool, Shapes); 4] = [
        (&[2, 0, 0], &[2, 0, 0], true, &[2, 0, 0]),
        (&[2, 0, 64], &[2, 3, 64], true, &[2, 3, 0]),
        (&[2, 4, 0], &[2, 3, 0], true, &[2, 3, 4]),
        (&[2, 0, 64], &[2, 3, 0], false, &[2, 3, 64]),
    ];
    for (ws, xs, transpose, want) in cases {
        for dtype in [DType::Float32, DType::Float16] {
            let what = format!("w {ws:?}, x {xs:?}, transpose {transpose}, {dtype:?}");
            let w = ferrox::zeros(ws, dtype).expect("w");
            let x = ferrox::ones(xs, dtype).expect("x");
            let (wq, s, b) = quantize(&w, None, None, "affine", None).expect(&what);
            let y = quantized_matmul(&x, &wq, &s, b.as_ref(), transpose, None, None, "affine")
                .expect(&what);
            assert_eq!(y.shape(), want, "{what}");
            let vals = y.astype(DType::Float32).and_then(|y| y.to_vec::<f32>());
            assert!(vals.expect(&what).iter().all(|&v| v == 0.0), "{what}");
        }
    }
}
