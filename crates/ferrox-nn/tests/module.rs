//! Modules: parameter trees, update/load errors, freezing, saving and
//! loading, gradients by finite differences, the compiled training step
//! and inference while another thread swaps weights.

mod common;

use common::values;
use ferrox::fast::AttentionMask;
use ferrox::{Array, DType};
use ferrox_nn::layers::*;
use ferrox_nn::optim::{Adam, Optimizer, Sgd};
use ferrox_nn::step::compile_step;
use ferrox_nn::{
    Forward, Module, Param, Params, SharedModule, impl_module, io, losses, value_and_grad,
};
use std::sync::{Arc, Barrier, mpsc};
use std::time::Duration;

#[derive(Clone)]
struct Net {
    layers: Vec<Linear>,
    norm: BatchNorm,
    head: Sequential,
}
impl_module!(Net { layers, norm, head });

impl Net {
    fn new() -> Net {
        Net {
            layers: vec![
                Linear::new(3, 4, true).unwrap(),
                Linear::new(4, 4, false).unwrap(),
            ],
            norm: BatchNorm::new(4, 1e-5, 0.1, true, true).unwrap(),
            head: Sequential::new()
                .push(Relu)
                .push(Linear::new(4, 2, true).unwrap()),
        }
    }
    fn forward(&self, x: &Array) -> ferrox::Result<Array> {
        let x = self
            .layers
            .iter()
            .try_fold(x.clone(), |x, l| l.forward(&x))?;
        self.head.forward(&self.norm.forward(&x)?)
    }
}

fn names(m: &impl Module) -> Vec<String> {
    m.named_parameters().into_iter().map(|(n, _)| n).collect()
}

#[test]
fn nested_names_follow_mlx() {
    let net = Net::new();
    assert_eq!(
        names(&net),
        [
            "layers.0.weight",
            "layers.0.bias",
            "layers.1.weight",
            "norm.weight",
            "norm.bias",
            "norm.running_mean",
            "norm.running_var",
            "head.layers.1.weight",
            "head.layers.1.bias"
        ]
    );
    let p = net.parameters();
    assert!(matches!(p.subtree("layers"), Some(Params::List(l)) if l.len() == 2));
    assert_eq!(net.trainable_parameters().named().len(), 7);
    assert_eq!(net.num_parameters(), 3 * 4 + 4 + 16 + 4 * 4 + 4 * 2 + 2);
}

#[test]
fn update_and_load_report_names_and_shapes() {
    let mut net = Net::new();
    let zero = net
        .parameters()
        .map_named(|_, a| ferrox::zeros_like(a))
        .unwrap();
    net.update(&zero, true).unwrap();
    assert!(values(&net.layers[0].weight).iter().all(|&v| v == 0.0));
    let mut extra = zero.to_map();
    extra.insert(
        "layers.7.weight".into(),
        ferrox::zeros(&[1], DType::Float32).unwrap(),
    );
    let e = net.update_named(&extra, true).unwrap_err();
    assert!(
        e.to_string().contains("no parameter named layers.7.weight"),
        "{e}"
    );
    net.update_named(&extra, false).unwrap();

    let mut bad = zero.to_map();
    bad.insert(
        "layers.1.weight".into(),
        ferrox::zeros(&[4, 5], DType::Float32).unwrap(),
    );
    bad.remove("norm.bias");
    bad.insert(
        "head.extra".into(),
        ferrox::zeros(&[1], DType::Float32).unwrap(),
    );
    let e = net.load_named(&bad, true).unwrap_err().to_string();
    assert!(e.contains("1 weights not in the model: head.extra"), "{e}");
    assert!(e.contains("missing 1 weights: norm.bias"), "{e}");
    assert!(
        e.contains("layers.1.weight: expected shape [4, 4], got [4, 5]"),
        "{e}"
    );
    // Nothing changed on the error.
    assert_eq!(net.layers[1].weight.shape(), &[4, 4]);
}

#[test]
fn freezing_by_path_module_and_own_name() {
    let mut net = Net::new();
    net.freeze(&["layers.0"], true).unwrap();
    net.freeze(&["bias"], true).unwrap();
    let t: Vec<String> = net
        .named_trainable_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(
        t,
        ["layers.1.weight", "norm.weight", "head.layers.1.weight"]
    );
    assert!(net.freeze(&["nothing"], true).is_err());
    net.freeze(&["nothing"], false).unwrap();
    net.unfreeze_all();
    assert_eq!(net.named_trainable_parameters().len(), 7); // buffers stay frozen
    net.freeze_all();
    let mut vg_net = net.clone();
    let vg = value_and_grad(|m: &Net, xs: &[Array]| m.forward(&xs[0])?.sum(None, false));
    let e = vg(
        &mut vg_net,
        &[ferrox::ones(&[2, 3], DType::Float32).unwrap()],
    )
    .unwrap_err();
    assert!(e.to_string().contains("no trainable parameters"), "{e}");
}

#[test]
fn train_and_eval_reach_every_sublayer() {
    let mut t = TransformerEncoder::new(
        2,
        TransformerConfig {
            dropout: 0.5,
            ..TransformerConfig::new(8, 2)
        },
    )
    .unwrap();
    assert!(t.is_training());
    t.eval();
    assert!(!t.is_training() && !t.layers[1].dropout2.training.get());
    let x = ferrox::ones(&[1, 3, 8], DType::Float32).unwrap();
    let (a, b) = (
        t.forward(&x, AttentionMask::None).unwrap(),
        t.forward(&x, AttentionMask::None).unwrap(),
    );
    assert_eq!(values(&a), values(&b)); // no dropout in eval mode
}

#[test]
fn safetensors_roundtrip_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("net.safetensors");
    let a = Net::new();
    a.norm
        .forward(&ferrox::random::normal(&[5, 4], DType::Float32, 0.0, 1.0, None).unwrap())
        .unwrap();
    let meta = [("format".to_string(), "mlx".to_string())].into();
    io::save_safetensors(&a, &path, Some(&meta)).unwrap();
    let mut b = Net::new();
    assert_eq!(io::load_safetensors(&mut b, &path, true).unwrap(), meta);
    for ((na, xa), (nb, xb)) in a.named_parameters().iter().zip(b.named_parameters()) {
        assert_eq!(na, &nb);
        assert_eq!(values(xa), values(&xb), "{na}");
    }
    // Another architecture: strict names every difference; non-strict loads what fits.
    let mut other = Sequential::new().push(Linear::new(3, 4, true).unwrap());
    let e = io::load_safetensors(&mut other, &path, true)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("load_weights: 7 weights not in the model: head.layers.1.bias"),
        "{e}"
    );
    io::load_safetensors(&mut other, &path, false).unwrap();
    assert_eq!(
        values(&other.parameters().get("layers.0.weight").unwrap().clone()),
        values(&a.layers[0].weight)
    );
    let missing = dir.path().join("none.safetensors");
    assert!(io::load_safetensors(&mut b, &missing, false).is_err());
}

/// Central differences in f64 of `f` at `x` along every coordinate.
fn fd_grad(f: &dyn Fn(&[f64]) -> f64, x: &[f64]) -> Vec<f64> {
    let eps = 1e-6;
    (0..x.len())
        .map(|i| {
            let (mut p, mut m) = (x.to_vec(), x.to_vec());
            p[i] += eps;
            m[i] -= eps;
            (f(&p) - f(&m)) / (2.0 * eps)
        })
        .collect()
}

/// The gradient of `loss(layer)` w.r.t. every trainable parameter agrees
/// with finite differences (in f64).
fn check_grads<M: Module + Clone + 'static>(
    what: &str,
    mut layer: M,
    loss: impl Fn(&M) -> ferrox::Result<Array> + Send + Sync + Clone + 'static,
) {
    layer.set_dtype(DType::Float64).unwrap();
    let l2 = loss.clone();
    let vg = value_and_grad(move |m: &M, _: &[Array]| l2(m));
    let mut copy = layer.clone();
    let (_, grads) = vg(&mut copy, &[]).unwrap();
    for (name, p) in layer.named_trainable_parameters() {
        let x0 = values(&p);
        let shape = p.shape().to_vec();
        let f = |x: &[f64]| {
            let mut m = layer.clone();
            let a = Array::from_slice(x, &shape).unwrap();
            m.update_named(&[(name.clone(), a)].into(), true).unwrap();
            loss(&m).unwrap().item::<f64>().unwrap()
        };
        let want = fd_grad(&f, &x0);
        let got = values(grads.get(&name).unwrap());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-5 + 1e-4 * w.abs(),
                "{what} {name}[{i}]: {g} vs {w}"
            );
        }
    }
}

#[test]
fn gradients_match_finite_differences() {
    let x3 = ferrox::random::normal(
        &[2, 3, 4],
        DType::Float64,
        0.0,
        1.0,
        Some(&ferrox::random::key(1).unwrap()),
    )
    .unwrap();
    let x = x3.clone();
    check_grads("Linear", Linear::new(4, 3, true).unwrap(), move |m| {
        ferrox::sin(&m.forward(&x)?)?.sum(None, false)
    });
    let x = x3.clone();
    let mut ln = LayerNorm::new(4, 1e-5, true, true).unwrap();
    ln.update(
        &ln.parameters()
            .map_named(|_, a| ferrox::random::normal(a.shape(), DType::Float32, 0.0, 1.0, None))
            .unwrap(),
        true,
    )
    .unwrap();
    check_grads("LayerNorm", ln, move |m| {
        ferrox::square(&m.forward(&x)?)?.sum(None, false)
    });
    let x = x3.clone();
    check_grads("GRU", Gru::new(4, 2, true).unwrap(), move |m| {
        m.forward(&x)?.sum(None, false)
    });
    let x = x3.clone();
    check_grads(
        "Conv1d",
        Conv1d::new(4, 2, [2], ConvOptions::default()).unwrap(),
        move |m| ferrox::square(&m.forward(&x)?)?.sum(None, false),
    );
    let x = x3;
    check_grads(
        "MultiHeadAttention",
        MultiHeadAttention::new(4, 2, true).unwrap(),
        move |m| ferrox::square(&m.forward(&x, &x, &x, AttentionMask::Causal)?)?.sum(None, false),
    );
}

fn mlp() -> Sequential {
    ferrox::random::seed(3);
    Sequential::new()
        .push(Linear::new(3, 8, true).unwrap())
        .push(Gelu::default())
        .push(Linear::new(8, 1, true).unwrap())
}

fn batch() -> [Array; 2] {
    let k = ferrox::random::key(9).unwrap();
    let x = ferrox::random::normal(&[16, 3], DType::Float32, 0.0, 1.0, Some(&k)).unwrap();
    let y = ferrox::sum(&x, Some(&[1]), true).unwrap();
    [x, y]
}

fn mse(m: &Sequential, xs: &[Array]) -> ferrox::Result<Array> {
    losses::mse_loss(&m.forward(&xs[0])?, &xs[1], losses::Reduction::Mean)
}

#[test]
fn compiled_step_traces_once_and_matches_the_eager_step() {
    let [x, y] = batch();
    let (mut eager, mut compiled) = (mlp(), mlp());
    let (mut opt_e, mut opt_c) = (Adam::new(0.01), Adam::new(0.01));
    let vg = value_and_grad(mse);
    let step = compile_step(&compiled, &mut opt_c, mse).unwrap();
    for i in 0..5 {
        let (le, g) = vg(&mut eager, &[x.clone(), y.clone()]).unwrap();
        opt_e.update(&mut eager, &g).unwrap();
        let lc = step
            .step(&mut compiled, &mut opt_c, &[x.clone(), y.clone()])
            .unwrap();
        let (a, b) = (le.item::<f32>().unwrap(), lc.item::<f32>().unwrap());
        assert!(
            (a - b).abs() <= 1e-5 * a.abs().max(1.0),
            "step {i}: {a} vs {b}"
        );
    }
    assert_eq!(step.traces(), 1);
    assert_eq!(opt_c.step().unwrap(), 5);
    for ((n, a), (_, b)) in eager
        .named_parameters()
        .iter()
        .zip(compiled.named_parameters())
    {
        for (u, v) in values(a).iter().zip(values(&b)) {
            assert!((u - v).abs() < 1e-5, "{n}: {u} vs {v}");
        }
    }
    // Changing what is trainable needs a new compile.
    compiled.freeze(&["layers.0"], true).unwrap();
    assert!(step.step(&mut compiled, &mut opt_c, &[x, y]).is_err());
}

#[test]
fn batch_norm_statistics_flow_out_of_grad_and_compiled_steps() {
    let mut bn_model = Net::new();
    let x = ferrox::random::normal(&[6, 3], DType::Float32, 0.0, 1.0, None).unwrap();
    let before = values(
        bn_model
            .named_parameters()
            .iter()
            .find(|(n, _)| n == "norm.running_mean")
            .map(|(_, a)| a)
            .unwrap(),
    );
    let vg = value_and_grad(|m: &Net, xs: &[Array]| m.forward(&xs[0])?.sum(None, false));
    vg(&mut bn_model, std::slice::from_ref(&x)).unwrap();
    let after_eager = bn_model
        .parameters()
        .get("norm.running_mean")
        .unwrap()
        .clone();
    assert_ne!(before, values(&after_eager));

    let mut m2 = Net::new();
    m2.update(
        &bn_model
            .parameters()
            .map_named(|_, a| Ok(a.clone()))
            .unwrap(),
        true,
    )
    .unwrap();
    m2.update_named(
        &[(
            "norm.running_mean".to_string(),
            ferrox::zeros(&[4], DType::Float32).unwrap(),
        )]
        .into(),
        true,
    )
    .unwrap();
    let mut opt = Sgd::new(0.0);
    let step = compile_step(&m2, &mut opt, |m: &Net, xs: &[Array]| {
        m.forward(&xs[0])?.sum(None, false)
    })
    .unwrap();
    step.step(&mut m2, &mut opt, &[x]).unwrap();
    let got = values(m2.parameters().get("norm.running_mean").unwrap());
    assert!(got.iter().any(|&v| v != 0.0));
}

/// Runs `f` on a thread and fails the test if it takes longer than
/// `secs` (a deadlock fails instead of hanging).
fn with_watchdog<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .expect("watchdog: the scenario did not finish in time")
}

#[test]
fn inference_sees_whole_weight_sets_while_another_thread_swaps_them() {
    with_watchdog(60, || {
        // Two weight sets A (all 1) and B (all 2) of a 2-layer net; x = ones:
        // A gives 4 * 1 * 4 * 1 = 16 per output, B gives 4 * 2 * 4 * 2 = 64;
        // a forward mixing layers would give 32.
        let mut net = Sequential::new()
            .push(Linear::new(4, 4, false).unwrap())
            .push(Linear::new(4, 1, false).unwrap());
        let set = |v: f64, m: &Sequential| {
            m.parameters()
                .map_named(|_, a| ferrox::full(a.shape(), v, DType::Float32))
                .unwrap()
        };
        let (a, b) = (set(1.0, &net), set(2.0, &net));
        net.update(&a, true).unwrap();
        let shared = Arc::new(SharedModule::new(net));
        let x = ferrox::ones(&[1, 4], DType::Float32).unwrap();
        // One compiled forward, shared by every reader; weights are inputs.
        let fwd = ferrox::compile(|xs: &[Array]| {
            let w0 = xs[0].t()?;
            let w1 = xs[1].t()?;
            Ok(vec![ferrox::matmul(&ferrox::matmul(&xs[2], &w0)?, &w1)?])
        });
        let readers = 4;
        let barrier = Arc::new(Barrier::new(readers + 1));
        let mut handles = Vec::new();
        for _ in 0..readers {
            let (shared, barrier, x, fwd) =
                (shared.clone(), barrier.clone(), x.clone(), fwd.clone());
            handles.push(std::thread::spawn(move || {
                barrier.wait();
                let mut seen = [0usize; 2];
                for i in 0..200 {
                    let m = shared.snapshot();
                    let y = if i % 2 == 0 {
                        m.forward(&x).unwrap()
                    } else {
                        let ws: Vec<Array> =
                            m.named_parameters().into_iter().map(|(_, a)| a).collect();
                        fwd.call(&[ws[0].clone(), ws[1].clone(), x.clone()])
                            .unwrap()
                            .remove(0)
                    };
                    match y.item::<f32>().unwrap() {
                        16.0 => seen[0] += 1,
                        64.0 => seen[1] += 1,
                        other => panic!("a forward saw a mixed weight set: {other}"),
                    }
                }
                seen
            }));
        }
        barrier.wait();
        for i in 0..200 {
            shared
                .update(if i % 2 == 0 { &b } else { &a }, true)
                .unwrap();
        }
        let seen: Vec<[usize; 2]> = handles
            .into_iter()
            .map(|h| h.join().expect("reader"))
            .collect();
        assert!(seen.iter().all(|s| s[0] + s[1] == 200));
        assert!(fwd.traces() <= 1);
    });
}

#[test]
fn models_are_send_and_sync_and_share_weights() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Net>();
    send_sync::<Transformer>();
    send_sync::<SharedModule<Net>>();
    send_sync::<Sequential>();
    let net = Net::new();
    let copy = net.clone();
    assert_eq!(net.layers[0].weight.id(), copy.layers[0].weight.id()); // no copy of the weights
}

#[test]
fn bad_inputs_are_errors_naming_the_layer() {
    let f = |shape: &[usize]| ferrox::ones(shape, DType::Float32).unwrap();
    let cases: Vec<(&str, ferrox::Result<Array>)> = vec![
        (
            "Linear",
            Linear::new(3, 2, true).unwrap().forward(&f(&[2, 4])),
        ),
        (
            "Conv2d",
            Conv2d::new(3, 2, [3, 3], ConvOptions::default())
                .unwrap()
                .forward(&f(&[1, 4, 4])),
        ),
        (
            "Conv2d",
            Conv2d::new(3, 2, [3, 3], ConvOptions::default())
                .unwrap()
                .forward(&f(&[1, 4, 4, 2])),
        ),
        (
            "BatchNorm",
            BatchNorm::new(3, 1e-5, 0.1, true, true)
                .unwrap()
                .forward(&f(&[1, 3])),
        ),
        (
            "LSTM",
            Lstm::new(3, 2, true)
                .unwrap()
                .forward_from(&f(&[2, 5, 3]), Some(&f(&[3, 2])), None)
                .map(|r| r.0),
        ),
        (
            "MaxPool2d",
            MaxPool2d::new([5, 5], None, [0, 0])
                .unwrap()
                .forward(&f(&[1, 3, 3, 1])),
        ),
        ("Embedding", Embedding::new(4, 2).unwrap().forward(&f(&[2]))),
        (
            "MultiHeadAttention",
            MultiHeadAttention::new(4, 2, false).unwrap().forward(
                &f(&[2, 4]),
                &f(&[2, 4]),
                &f(&[2, 4]),
                AttentionMask::None,
            ),
        ),
        (
            "RMSNorm",
            RmsNorm::new(4, 1e-5).unwrap().forward(&f(&[2, 3])),
        ),
    ];
    for (who, r) in cases {
        let e = r.expect_err(who).to_string();
        assert!(e.starts_with(&format!("{who}:")), "{who}: {e}");
    }
    assert!(Dropout::new(-0.1).is_err());
    assert!(Conv1d::new(3, 4, [0], ConvOptions::default()).is_err());
    assert!(GroupNorm::new(0, 4, 1e-5, true, false).is_err());
    assert!(Linear::new(0, 1, true).is_err());
    let p = Param::new(f(&[2]));
    assert!(!p.is_frozen());
}

#[test]
fn quantize_pass_reaches_nested_layers() {
    let mut t = TransformerEncoder::new(1, TransformerConfig::new(64, 2)).unwrap();
    let n = quantize(
        &mut t,
        Some(64),
        Some(4),
        "affine",
        Some(&|path: &str, _: &Array| !path.contains("linear2")),
    )
    .unwrap();
    assert_eq!(n, 5); // q, k, v, out projections and linear1
    let p = t.parameters();
    assert_eq!(
        p.get("layers.0.attention.query_proj.weight")
            .unwrap()
            .dtype(),
        DType::UInt32
    );
    assert!(p.get("layers.0.attention.query_proj.scales").is_some());
    assert_eq!(
        p.get("layers.0.linear2.weight").unwrap().dtype(),
        DType::Float32
    );
    let y = t
        .forward(
            &ferrox::ones(&[1, 2, 64], DType::Float32).unwrap(),
            AttentionMask::None,
        )
        .unwrap();
    assert_eq!(y.shape(), &[1, 2, 64]);
    let _ = Adam::new(0.1).learning_rate();
}
