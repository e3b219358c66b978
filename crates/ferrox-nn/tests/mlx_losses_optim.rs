//! Losses (every reduction), optimizers (their first three steps on fixed
//! gradients) and schedules against mlx 0.32.4 (`fixtures/nn.json`).

mod common;

use common::*;
use ferrox::Array;
use ferrox_nn::Params;
use ferrox_nn::losses::{self, Reduction};
use ferrox_nn::optim::{self, Optimizer, schedule};
use serde_json::Value;
use std::sync::Arc;

fn loss_of(c: &Value) -> Array {
    let x: Vec<Array> = c["inputs"].as_array().unwrap().iter().map(array).collect();
    let r = Reduction::parse(c["args"]["reduction"].as_str().unwrap()).unwrap();
    match c["kind"].as_str().unwrap() {
        "cross_entropy" => losses::cross_entropy(&x[0], &x[1], None, -1, 0.0, r),
        "cross_entropy_smooth" => losses::cross_entropy(&x[0], &x[1], None, -1, 0.1, r),
        "bce_logits" => losses::binary_cross_entropy(&x[0], &x[1], None, true, r),
        "bce_probs" => losses::binary_cross_entropy(&x[0], &x[1], None, false, r),
        "l1" => losses::l1_loss(&x[0], &x[1], r),
        "mse" => losses::mse_loss(&x[0], &x[1], r),
        "nll" => losses::nll_loss(&x[0], &x[1], -1, r),
        "gaussian_nll" => losses::gaussian_nll_loss(&x[0], &x[1], &x[2], false, 1e-6, r),
        "gaussian_nll_full" => losses::gaussian_nll_loss(&x[0], &x[1], &x[2], true, 1e-6, r),
        "kl_div" => losses::kl_div_loss(&x[0], &x[1], -1, r),
        "smooth_l1" => losses::smooth_l1_loss(&x[0], &x[1], 1.0, r),
        "triplet" => losses::triplet_loss(&x[0], &x[1], &x[2], -1, 2.0, 1.0, 1e-6, r),
        "hinge" => losses::hinge_loss(&x[0], &x[1], r),
        "huber" => losses::huber_loss(&x[0], &x[1], 1.0, r),
        "log_cosh" => losses::log_cosh_loss(&x[0], &x[1], r),
        "cosine_similarity" => losses::cosine_similarity_loss(&x[0], &x[1], 1, 1e-8, r),
        "margin_ranking" => losses::margin_ranking_loss(&x[0], &x[1], &x[2], 0.1, r),
        other => panic!("unknown loss {other}"),
    }
    .unwrap_or_else(|e| panic!("{}: {e}", c["name"]))
}

#[test]
fn losses_match_mlx_with_every_reduction() {
    let cases = section("losses");
    let kinds: std::collections::BTreeSet<&str> =
        cases.iter().map(|c| c["kind"].as_str().unwrap()).collect();
    for c in cases {
        assert_close(
            c["name"].as_str().unwrap(),
            &loss_of(c),
            &c["output"],
            1e-5,
            1e-5,
        );
    }
    assert_eq!(cases.len(), 54);
    assert!(kinds.len() >= 17, "{kinds:?}");
}

fn opt_f(c: &Value, k: &str, default: f64) -> f64 {
    c["args"][k].as_f64().unwrap_or(default)
}

fn optimizer(c: &Value) -> Box<dyn Optimizer> {
    let lr = opt_f(c, "lr", 0.0);
    match c["kind"].as_str().unwrap() {
        "SGD" if c["args"].get("cosine").is_some() => Box::new(optim::Sgd::new(
            schedule::cosine_decay(0.1, 4, 0.0).unwrap(),
        )),
        "SGD" => Box::new(
            optim::Sgd::new(lr)
                .momentum(opt_f(c, "momentum", 0.0))
                .weight_decay(opt_f(c, "weight_decay", 0.0))
                .dampening(opt_f(c, "dampening", 0.0))
                .nesterov(c["args"]["nesterov"].as_bool().unwrap_or(false)),
        ),
        "RMSprop" => Box::new(optim::RmsProp::new(lr)),
        "Adagrad" => Box::new(optim::Adagrad::new(lr)),
        "AdaDelta" => Box::new(optim::AdaDelta::new(lr)),
        "Adam" => Box::new(
            optim::Adam::new(lr)
                .bias_correction(c["args"]["bias_correction"].as_bool().unwrap_or(false)),
        ),
        "AdamW" => Box::new(optim::AdamW::new(lr).weight_decay(opt_f(c, "weight_decay", 0.01))),
        "Adamax" => Box::new(optim::Adamax::new(lr)),
        "Lion" => Box::new(optim::Lion::new(lr).weight_decay(opt_f(c, "weight_decay", 0.0))),
        "Adafactor" if c["args"].get("lr").is_some() => Box::new(
            optim::Adafactor::with_learning_rate(lr)
                .relative_step(false)
                .beta_1(Some(opt_f(c, "beta_1", 0.9)))
                .weight_decay(opt_f(c, "weight_decay", 0.0)),
        ),
        "Adafactor" => Box::new(optim::Adafactor::new()),
        "Muon" => Box::new(
            optim::Muon::new(lr)
                .nesterov(c["args"]["nesterov"].as_bool().unwrap_or(true))
                .weight_decay(opt_f(c, "weight_decay", 0.01)),
        ),
        "Multi" => Box::new(
            optim::MultiOptimizer::new(
                vec![
                    Box::new(optim::Sgd::new(0.1)),
                    Box::new(optim::Adam::new(0.01)),
                ],
                vec![Arc::new(|_: &str, a: &Array| a.ndim() == 2)],
            )
            .unwrap(),
        ),
        other => panic!("unknown optimizer {other}"),
    }
}

fn tree(v: &Value) -> Params {
    Params::from_named(named(v)).unwrap()
}

#[test]
fn optimizers_match_mlx_for_three_steps() {
    let cases = section("optimizers");
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let mut opt = optimizer(c);
        let mut params = tree(&c["params"]);
        for (s, (g, after)) in c["grads"]
            .as_array()
            .unwrap()
            .iter()
            .zip(c["after"].as_array().unwrap())
            .enumerate()
        {
            params = opt
                .apply_gradients(&tree(g), &params)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            for (k, want) in after.as_object().unwrap() {
                assert_close(
                    &format!("{name} step {} {k}", s + 1),
                    params.get(k).unwrap(),
                    want,
                    2e-6,
                    2e-5,
                );
            }
        }
        assert_eq!(opt.step().unwrap(), 3, "{name}");
    }
    assert_eq!(cases.len(), 17);
}

#[test]
fn schedules_match_mlx() {
    for c in section("schedules") {
        let s = match c["kind"].as_str().unwrap() {
            "exponential" => schedule::exponential_decay(0.1, 0.9),
            "step" => schedule::step_decay(0.1, 0.5, 3).unwrap(),
            "cosine" => schedule::cosine_decay(0.1, 10, 0.01).unwrap(),
            "linear" => schedule::linear_schedule(0.0, 0.1, 10).unwrap(),
            "join" => schedule::join_schedules(
                vec![
                    schedule::linear_schedule(0.0, 0.1, 5).unwrap(),
                    schedule::cosine_decay(0.1, 10, 0.0).unwrap(),
                ],
                &[5],
            )
            .unwrap(),
            other => panic!("{other}"),
        };
        let steps = c["steps"].as_array().unwrap();
        for (st, want) in steps.iter().zip(c["values"].as_array().unwrap()) {
            let got = s(&Array::scalar(st.as_u64().unwrap()))
                .unwrap()
                .item::<f32>()
                .unwrap() as f64;
            let want = want.as_f64().unwrap();
            assert!(
                (got - want).abs() <= 1e-7 + 1e-5 * want.abs(),
                "{} step {st}: {got} vs {want}",
                c["name"]
            );
        }
    }
}

#[test]
fn optimizer_state_saves_and_loads_and_continues_identically() {
    let p = Params::from_named([(
        "w".to_string(),
        ferrox::ones(&[2, 2], ferrox::DType::Float32).unwrap(),
    )])
    .unwrap();
    let g = p.map_named(|_, a| a * 0.5).unwrap();
    let mut a = optim::Adam::new(0.1);
    let p1 = a.apply_gradients(&g, &p).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("opt.safetensors");
    let state: ferrox::io::Arrays = a.state().to_map();
    ferrox::io::save_safetensors(&path, &state, None).unwrap();
    let (loaded, _) = ferrox::io::safetensors::load(&path).unwrap();
    let mut b = optim::Adam::new(0.1);
    b.set_state(&Params::from_named(loaded).unwrap()).unwrap();
    assert_eq!(b.step().unwrap(), 1);
    let (pa, pb) = (
        a.apply_gradients(&g, &p1).unwrap(),
        b.apply_gradients(&g, &p1).unwrap(),
    );
    assert_eq!(values(pa.get("w").unwrap()), values(pb.get("w").unwrap()));
    // A malformed state is an error naming the optimizer.
    let e = b.set_state(&Params::new()).unwrap_err();
    assert!(e.to_string().starts_with("Adam:"), "{e}");
}
