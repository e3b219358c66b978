//! Every layer against mlx 0.32.4 on fixed weights (`fixtures/nn.json`):
//! the layer is built with the fixture's arguments, loads mlx's weights
//! strictly (so the parameter names and shapes are mlx's), and maps the
//! inputs to mlx's outputs.

mod common;

use common::*;
use ferrox::Array;
use ferrox::fast::AttentionMask;
use ferrox_nn::layers::*;
use ferrox_nn::{Forward, Module};
use serde_json::Value;

fn load<M: Module>(mut m: M, case: &Value) -> M {
    let w = named(&case["weights"]);
    m.load_named(&w, true)
        .unwrap_or_else(|e| panic!("{}: {e}", case["name"]));
    m
}

fn conv_opts<const N: usize>(c: &Value, bias: bool) -> ConvOptions<N> {
    ConvOptions {
        stride: dims(c, "stride"),
        padding: dims(c, "padding"),
        dilation: dims(c, "dilation"),
        groups: usize_arg(c, "groups"),
        output_padding: [0; N],
        bias,
    }
}

fn pool<const N: usize>(c: &Value) -> Pool<N> {
    let kind = if c["args"]["pool"] == "max" {
        PoolKind::Max
    } else {
        PoolKind::Avg
    };
    Pool::new(
        kind,
        dims(c, "k"),
        Some(dims(c, "stride")),
        dims(c, "padding"),
    )
    .expect("pool")
}

/// The outputs of the layer of case `c` on its inputs.
fn run(c: &Value) -> Vec<Array> {
    let inputs: Vec<Array> = c["inputs"]
        .as_array()
        .expect("inputs")
        .iter()
        .map(array)
        .collect();
    let x = &inputs[0];
    let one = |y: ferrox::Result<Array>| vec![y.expect("forward")];
    match c["kind"].as_str().expect("kind") {
        "Linear" => {
            let l = load(
                Linear::new(usize_arg(c, "in"), usize_arg(c, "out"), bool_arg(c, "bias")).unwrap(),
                c,
            );
            one(l.forward(x))
        }
        "Bilinear" => {
            let l = load(
                Bilinear::new(
                    usize_arg(c, "in1"),
                    usize_arg(c, "in2"),
                    usize_arg(c, "out"),
                    true,
                )
                .unwrap(),
                c,
            );
            one(l.forward(x, &inputs[1]))
        }
        "Embedding" => one(load(
            Embedding::new(usize_arg(c, "num"), usize_arg(c, "dims")).unwrap(),
            c,
        )
        .forward(x)),
        "EmbeddingAsLinear" => one(load(
            Embedding::new(usize_arg(c, "num"), usize_arg(c, "dims")).unwrap(),
            c,
        )
        .as_linear(x)),
        "LayerNorm" => one(load(
            LayerNorm::new(usize_arg(c, "dims"), 1e-5, true, true).unwrap(),
            c,
        )
        .forward(x)),
        "RMSNorm" => one(load(RmsNorm::new(usize_arg(c, "dims"), 1e-5).unwrap(), c).forward(x)),
        "GroupNorm" => {
            let g = GroupNorm::new(
                usize_arg(c, "groups"),
                usize_arg(c, "dims"),
                1e-5,
                true,
                bool_arg(c, "pytorch"),
            )
            .unwrap();
            one(load(g, c).forward(x))
        }
        "InstanceNorm" => one(load(
            InstanceNorm::new(usize_arg(c, "dims"), 1e-5, true).unwrap(),
            c,
        )
        .forward(x)),
        "BatchNorm" => {
            let mut bn = load(
                BatchNorm::new(usize_arg(c, "dims"), 1e-5, 0.1, true, true).unwrap(),
                c,
            );
            let train = bn.forward(x).expect("train");
            let p = bn.parameters();
            assert_close(
                "running_mean",
                p.get("running_mean").unwrap(),
                &c["args"]["stats"]["running_mean"],
                1e-5,
                1e-5,
            );
            assert_close(
                "running_var",
                p.get("running_var").unwrap(),
                &c["args"]["stats"]["running_var"],
                1e-5,
                1e-5,
            );
            bn.eval();
            vec![train, bn.forward(x).expect("eval")]
        }
        "RoPE" => {
            let r = Rope::new(
                usize_arg(c, "dims"),
                bool_arg(c, "traditional"),
                10000.0,
                1.0,
            )
            .unwrap();
            one(r.forward_at(x, c["args"]["offset"].as_i64().unwrap()))
        }
        "Sinusoidal" => one(SinusoidalPositionalEncoding::new(
            usize_arg(c, "dims"),
            1e-4,
            1.0,
            None,
            false,
            false,
        )
        .unwrap()
        .forward(x)),
        "ALiBi" => one(Alibi.forward(x, usize_arg(c, "offset"), None)),
        "MultiHeadAttention" => {
            let m = load(
                MultiHeadAttention::new(usize_arg(c, "dims"), usize_arg(c, "heads"), true).unwrap(),
                c,
            );
            one(m.forward(x, x, x, AttentionMask::Causal))
        }
        "TransformerEncoderLayer" => {
            let mut cfg = TransformerConfig::new(usize_arg(c, "dims"), usize_arg(c, "heads"));
            cfg.mlp_dims = usize_arg(c, "mlp");
            cfg.norm_first = bool_arg(c, "norm_first");
            let l = load(TransformerEncoderLayer::new(cfg).unwrap(), c);
            let mask = if cfg.norm_first {
                AttentionMask::Causal
            } else {
                AttentionMask::None
            };
            one(l.forward(x, mask))
        }
        "TransformerDecoderLayer" => {
            let mut cfg = TransformerConfig::new(usize_arg(c, "dims"), usize_arg(c, "heads"));
            cfg.mlp_dims = usize_arg(c, "mlp");
            let l = load(TransformerDecoderLayer::new(cfg).unwrap(), c);
            one(l.forward(x, &inputs[1], AttentionMask::Causal, AttentionMask::None))
        }
        "RNN" => one(load(
            Rnn::new(usize_arg(c, "in"), usize_arg(c, "hidden"), true).unwrap(),
            c,
        )
        .forward(x)),
        "GRU" => one(load(
            Gru::new(usize_arg(c, "in"), usize_arg(c, "hidden"), true).unwrap(),
            c,
        )
        .forward(x)),
        "LSTM" => {
            let (h, cell) = load(
                Lstm::new(usize_arg(c, "in"), usize_arg(c, "hidden"), true).unwrap(),
                c,
            )
            .forward_from(x, None, None)
            .expect("lstm");
            vec![h, cell]
        }
        "Conv1d" => one(load(
            Conv1d::new(
                usize_arg(c, "in"),
                usize_arg(c, "out"),
                dims(c, "k"),
                conv_opts(c, true),
            )
            .unwrap(),
            c,
        )
        .forward(x)),
        "Conv2d" => one(load(
            Conv2d::new(
                usize_arg(c, "in"),
                usize_arg(c, "out"),
                dims(c, "k"),
                conv_opts(c, true),
            )
            .unwrap(),
            c,
        )
        .forward(x)),
        "Conv3d" => one(load(
            Conv3d::new(
                usize_arg(c, "in"),
                usize_arg(c, "out"),
                dims(c, "k"),
                conv_opts(c, true),
            )
            .unwrap(),
            c,
        )
        .forward(x)),
        "ConvTranspose1d" => one(load(
            ConvTranspose1d::new(
                usize_arg(c, "in"),
                usize_arg(c, "out"),
                dims(c, "k"),
                conv_opts(c, true),
            )
            .unwrap(),
            c,
        )
        .forward(x)),
        "ConvTranspose2d" => one(load(
            ConvTranspose2d::new(
                usize_arg(c, "in"),
                usize_arg(c, "out"),
                dims(c, "k"),
                conv_opts(c, true),
            )
            .unwrap(),
            c,
        )
        .forward(x)),
        "ConvTranspose3d" => one(load(
            ConvTranspose3d::new(
                usize_arg(c, "in"),
                usize_arg(c, "out"),
                dims(c, "k"),
                conv_opts(c, true),
            )
            .unwrap(),
            c,
        )
        .forward(x)),
        "Pool1d" => one(pool::<1>(c).forward(x)),
        "Pool2d" => one(pool::<2>(c).forward(x)),
        "Pool3d" => one(pool::<3>(c).forward(x)),
        "Upsample" => {
            let scale: Vec<f64> = c["args"]["scale"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect();
            let mode = if c["args"]["mode"] == "nearest" {
                UpsampleMode::Nearest
            } else {
                UpsampleMode::Linear
            };
            one(Upsample::new(scale, mode, bool_arg(c, "align"))
                .unwrap()
                .forward(x))
        }
        "QuantizedLinear" => {
            let l = load(
                Linear::new(usize_arg(c, "in"), usize_arg(c, "out"), true).unwrap(),
                c,
            );
            let q = l
                .to_quantized(
                    Some(usize_arg(c, "gs")),
                    Some(usize_arg(c, "bits")),
                    "affine",
                )
                .unwrap();
            // Our packing is mlx's, bit for bit.
            let mine = q.parameters().to_map();
            for (k, want) in named(&c["quantized_weights"]) {
                assert_close(
                    &format!("quantized {k}"),
                    &mine[&k],
                    &c["quantized_weights"][&k],
                    1e-6,
                    1e-6,
                );
                assert_eq!(mine[&k].dtype(), want.dtype(), "{k}");
            }
            one(q.forward(x))
        }
        other => panic!("unknown layer kind {other}"),
    }
}

#[test]
fn layers_match_mlx_on_fixed_weights() {
    let cases = section("layers");
    for c in cases {
        let got = run(c);
        let want = c["outputs"].as_array().expect("outputs");
        assert_eq!(got.len(), want.len(), "{}", c["name"]);
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert_close(&format!("{} output {i}", c["name"]), g, w, 2e-4, 2e-4);
        }
    }
    assert!(cases.len() >= 40);
}

#[test]
fn activations_match_mlx() {
    for c in section("activations") {
        let x = array(&c["input"]);
        let name = c["name"].as_str().unwrap();
        let y = match name {
            "sigmoid" => sigmoid(&x),
            "relu" => relu(&x),
            "relu2" => relu2(&x),
            "relu6" => relu6(&x),
            "leaky_relu" => leaky_relu(&x, 0.01),
            "log_softmax" => log_softmax(&x, -1),
            "elu" => elu(&x, 1.0),
            "softmax" => softmax(&x, -1),
            "softplus" => softplus(&x),
            "softsign" => softsign(&x),
            "softshrink" => softshrink(&x, 0.5),
            "celu" => celu(&x, 1.0),
            "silu" => silu(&x),
            "log_sigmoid" => log_sigmoid(&x),
            "gelu" => gelu(&x),
            "gelu_approx" => gelu_approx(&x),
            "gelu_fast_approx" => gelu_fast_approx(&x),
            "step" => step(&x, 0.0),
            "selu" => selu(&x),
            "mish" => mish(&x),
            "hardswish" => hardswish(&x),
            "hard_tanh" => hard_tanh(&x, -1.0, 1.0),
            "hard_shrink" => hard_shrink(&x, 0.5),
            "softmin" => softmin(&x, -1),
            "tanh" => tanh(&x),
            "glu" => glu(&x, -1),
            "prelu" => PRelu::new(1, 0.3).unwrap().forward(&x),
            other => panic!("unknown activation {other}"),
        }
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_close(name, &y, &c["output"], 1e-5, 1e-5);
    }
}
