//! The sentence encoder.
//!
//! With the real model (`FERROX_MINILM_DIR`, the folder that
//! `scripts/fetch-minilm.sh` prints): every sentence of
//! `fixtures/minilm.json` (sentence-transformers on torch, from
//! `scripts/gen_minilm_fixture.py`) tokenizes to the same ids and embeds
//! within cosine distance 1e-5, batched and one at a time; four threads
//! share one encoder. Without it those tests say they are skipped, unless
//! `FERROX_REQUIRE_MINILM=1`, which makes a missing model a failure.
//!
//! Always: a tiny random BERT with a hand-written word-piece tokenizer,
//! written to a temporary directory, runs the same loading and embedding
//! path, and broken directories (files missing, a weight missing or
//! mis-shaped) are errors that name what is wrong.

use ferrox_cli::embed::{Bert, BertConfig, Init, SentenceEncoder};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier, Mutex, MutexGuard, OnceLock, mpsc};
use std::time::Duration;

// ---------------------------------------------------------------- helpers

fn cosine_distance(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum();
    let na: f64 = a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    1.0 - dot / (na * nb)
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// Runs `f` on its own thread and fails the test if it takes longer than
/// `limit` (a hang becomes a failure, not a stuck test run).
fn with_watchdog<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("timed out after {limit:?}"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the worker thread panicked"),
    }
}

/// `threads` threads, started together by a barrier, each embedding
/// `texts` through the one shared `encoder`; returns each thread's result.
fn embed_concurrently(
    encoder: Arc<SentenceEncoder>,
    texts: Vec<String>,
    threads: usize,
) -> Vec<Vec<Vec<f32>>> {
    with_watchdog(Duration::from_secs(300), move || {
        let barrier = Arc::new(Barrier::new(threads));
        let texts = Arc::new(texts);
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (enc, barrier, texts) = (encoder.clone(), barrier.clone(), texts.clone());
                std::thread::spawn(move || {
                    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                    barrier.wait();
                    enc.embed(&refs).expect("embed on a worker thread")
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a worker thread panicked"))
            .collect()
    })
}

// ------------------------------------------------------------- tiny model

const TINY_WORDS: &[&str] = &[
    "a", "man", "is", "eating", "food", "the", "girl", "carry", "##ing", "baby", "hi", ".", ",",
    "!", "?", "dog", "fox", "quick", "brown", "jump", "##s", "over", "lazy", "cafe",
];

/// A word-piece tokenizer.json over [`TINY_WORDS`] in the layout of
/// MiniLM's (BERT normalizer and pre-tokenizer, `[CLS] A [SEP]`), with its
/// own truncation and padding settings set (the encoder replaces them).
fn tiny_tokenizer_json() -> (String, usize) {
    let special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
    let vocab: serde_json::Map<String, serde_json::Value> = special
        .iter()
        .chain(TINY_WORDS)
        .enumerate()
        .map(|(i, w)| (w.to_string(), i.into()))
        .collect();
    let added: Vec<serde_json::Value> = special
        .iter()
        .enumerate()
        .map(|(i, t)| {
            serde_json::json!({"id": i, "special": true, "content": t, "single_word": false,
                "lstrip": false, "rstrip": false, "normalized": false})
        })
        .collect();
    let n = vocab.len();
    let json = serde_json::json!({
        "version": "1.0",
        "truncation": {"max_length": 4, "strategy": "LongestFirst", "stride": 0},
        "padding": {"strategy": {"Fixed": 12}, "direction": "Right", "pad_to_multiple_of": null,
            "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]"},
        "added_tokens": added,
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
            "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                               "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}},
        "decoder": null,
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100, "vocab": vocab}
    });
    (json.to_string(), n)
}

/// Writes a tiny random model directory (max_seq_length 16); returns the
/// directory and the model.
fn tiny_model_dir(seed: u64) -> (tempfile::TempDir, Bert) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (tokenizer, vocab) = tiny_tokenizer_json();
    std::fs::write(dir.path().join("tokenizer.json"), tokenizer).expect("write tokenizer.json");
    let config = BertConfig::tiny(vocab);
    let config_json = serde_json::json!({
        "vocab_size": config.vocab_size, "hidden_size": config.hidden_size,
        "num_hidden_layers": config.num_hidden_layers,
        "num_attention_heads": config.num_attention_heads,
        "intermediate_size": config.intermediate_size,
        "max_position_embeddings": config.max_position_embeddings,
        "type_vocab_size": config.type_vocab_size, "layer_norm_eps": config.layer_norm_eps,
        "hidden_act": "gelu", "model_type": "bert"
    });
    std::fs::write(dir.path().join("config.json"), config_json.to_string()).expect("config");
    std::fs::write(
        dir.path().join("sentence_bert_config.json"),
        r#"{"max_seq_length": 16, "do_lower_case": false}"#,
    )
    .expect("sentence_bert_config.json");
    ferrox::random::seed(seed);
    let model = Bert::new(config, Init::Random).expect("a tiny model");
    ferrox_nn::io::save_safetensors(&model, dir.path().join("model.safetensors"), None)
        .expect("save the tiny model");
    (dir, model)
}

/// Rewrites `dir/model.safetensors` through `edit` (ferrox::io).
fn edit_weights(dir: &Path, edit: impl FnOnce(&mut ferrox::io::Arrays)) {
    let path = dir.join("model.safetensors");
    let (mut arrays, _) = ferrox::io::safetensors::load(&path).expect("load weights");
    ferrox::eval(&arrays.values().cloned().collect::<Vec<_>>()).expect("read weights");
    edit(&mut arrays);
    // Write a new file, then move it over the mapped one.
    let tmp = dir.join("edited.safetensors");
    ferrox::io::save_safetensors(&tmp, &arrays, None).expect("save weights");
    drop(arrays);
    std::fs::rename(&tmp, &path).expect("replace weights");
}

fn copy_dir_files(from: &Path, to: &Path, except: &[&str]) {
    for entry in std::fs::read_dir(from).expect("read model dir") {
        let entry = entry.expect("a directory entry");
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if entry.path().is_file() && !except.contains(&name.as_ref()) {
            std::fs::copy(entry.path(), to.join(&*name)).expect("copy a model file");
        }
    }
}

#[test]
fn tiny_model_embeds_unit_vectors_batched_as_alone() {
    let (dir, _) = tiny_model_dir(5);
    let enc = SentenceEncoder::load(dir.path()).expect("load the tiny model");
    assert_eq!(enc.dims(), 16);
    assert_eq!(enc.max_tokens(), 16);
    let texts = [
        "A man is eating food.",
        "",
        "the quick brown fox jumps over the lazy dog, the quick brown fox jumps!",
        "Hi?",
        "  Café  ",
        "unknown words become unk",
    ];
    // The file's truncation (4) and padding (12) are replaced.
    assert_eq!(enc.tokenize("").expect("tokenize"), vec![2, 3]);
    let long = enc.tokenize(texts[2]).expect("tokenize");
    assert_eq!(long.len(), 16);
    assert_eq!((long[0], long[15]), (2, 3));
    assert_eq!(enc.tokenize("a man").expect("tokenize"), vec![2, 5, 6, 3]);

    let batch = enc.embed(&texts).expect("embed a batch");
    assert_eq!(batch.len(), texts.len());
    for (text, v) in texts.iter().zip(&batch) {
        assert_eq!(v.len(), 16);
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{text:?}: norm {norm}");
        let alone = enc.embed(&[text]).expect("embed one");
        assert!(max_abs_diff(v, &alone[0]) < 1e-5, "{text:?}");
    }
    assert!(
        cosine_distance(&batch[0], &batch[1]) > 1e-3,
        "different texts differ"
    );
    assert!(enc.embed(&[]).expect("no texts").is_empty());
}

#[test]
fn the_server_answers_embeddings_as_the_encoder_does() {
    use ferrox_cli::client::Client;
    use ferrox_cli::server::{App, Server};
    use serde_json::json;
    let (dir, _) = tiny_model_dir(6);
    let enc = SentenceEncoder::load(dir.path()).expect("load the tiny model");
    let direct = enc.embed(&["a man", "Hi?"]).expect("embed");
    let embedder = ferrox_cli::embed::load_embedder(dir.path()).expect("load");
    let app = Arc::new(App::new(None, "none", Some(embedder), 4));
    let server = Server::start(app, "127.0.0.1:0".parse().expect("address")).expect("start");
    let client = Client::new(server.addr(), Duration::from_secs(60));
    let r = client
        .post("/v1/embeddings", &json!({"input": ["a man", "Hi?"]}))
        .expect("post");
    assert_eq!(r.status, 200, "{}", r.body);
    for (i, want) in direct.iter().enumerate() {
        let got: Vec<f32> = r.body["data"][i]["embedding"]
            .as_array()
            .expect("an embedding")
            .iter()
            .map(|x| x.as_f64().unwrap_or(f64::NAN) as f32)
            .collect();
        assert!(max_abs_diff(&got, want) < 1e-6, "input {i}");
    }
    let tokens: usize = ["a man", "Hi?"]
        .iter()
        .map(|t| enc.tokenize(t).expect("tokenize").len())
        .sum();
    assert_eq!(r.body["usage"]["prompt_tokens"], tokens);
    let models = client.get("/v1/models").expect("models");
    assert_eq!(models.body["data"].as_array().map(Vec::len), Some(1));
    let empty = client
        .post("/v1/embeddings", &json!({"input": []}))
        .expect("post");
    assert_eq!(empty.status, 400, "{}", empty.body);
    let no_lm = client
        .post("/v1/completions", &json!({"prompt": "1"}))
        .expect("post");
    assert_eq!(no_lm.status, 404, "{}", no_lm.body);
    server.stop();
}

#[test]
fn tiny_model_traces_once_per_batch_and_bucket() {
    let (dir, _) = tiny_model_dir(6);
    let enc = SentenceEncoder::load(dir.path()).expect("load the tiny model");
    assert_eq!(enc.traces(), 0);
    enc.embed(&["a man", "the girl"]).expect("embed");
    assert_eq!(enc.traces(), 1);
    // Same batch size, same bucket (8): a replay.
    enc.embed(&["a dog", "hi"]).expect("embed");
    assert_eq!(enc.traces(), 1);
    // A longer text: bucket 16.
    enc.embed(&["a dog", "a man is eating food . a man is eating"])
        .expect("embed");
    assert_eq!(enc.traces(), 2);
    // Another batch size.
    enc.embed(&["a dog"]).expect("embed");
    assert_eq!(enc.traces(), 3);
    // 40 texts: a batch of 32 and one of 8, both bucket 8.
    let many = vec!["a man"; 40];
    let out = enc.embed(&many).expect("embed 40");
    assert_eq!(out.len(), 40);
    assert_eq!(enc.traces(), 5);
    enc.embed(&many).expect("embed 40 again");
    assert_eq!(enc.traces(), 5);
}

#[test]
fn tiny_model_serves_threads_through_one_encoder() {
    let (dir, _) = tiny_model_dir(7);
    let enc = Arc::new(SentenceEncoder::load(dir.path()).expect("load the tiny model"));
    let texts: Vec<String> = (0..10)
        .map(|i| "a man is eating food . ".repeat(i % 4 + 1))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let want = enc.embed(&refs).expect("embed");
    let got = embed_concurrently(enc.clone(), texts, 4);
    for g in got {
        assert_eq!(g, want);
    }
}

#[test]
fn a_directory_without_the_files_is_an_error() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let e = SentenceEncoder::load(dir.path()).unwrap_err().to_string();
    assert!(
        e.contains("missing config.json, model.safetensors, tokenizer.json"),
        "{e}"
    );
    let e = SentenceEncoder::load(&dir.path().join("nowhere"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("nowhere"), "{e}");
}

#[test]
fn a_missing_or_misshaped_weight_is_named() {
    let (dir, _) = tiny_model_dir(8);
    let name = "encoder.layer.1.attention.self.key.weight";
    edit_weights(dir.path(), |w| {
        w.remove(name);
    });
    let e = SentenceEncoder::load(dir.path()).unwrap_err().to_string();
    assert!(e.contains("model.safetensors") && e.contains(name), "{e}");

    let (dir, _) = tiny_model_dir(9);
    let name = "encoder.layer.0.intermediate.dense.weight";
    edit_weights(dir.path(), |w| {
        w.insert(
            name.into(),
            ferrox::zeros(&[8, 16], ferrox::DType::Float32).expect("zeros"),
        );
    });
    let e = SentenceEncoder::load(dir.path()).unwrap_err().to_string();
    assert!(
        e.contains(&format!("{name}: expected shape [32, 16], got [8, 16]")),
        "{e}"
    );

    let (dir, _) = tiny_model_dir(10);
    edit_weights(dir.path(), |w| {
        w.insert(
            "encoder.layer.9.output.dense.weight".into(),
            ferrox::zeros(&[2], ferrox::DType::Float32).expect("zeros"),
        );
    });
    let e = SentenceEncoder::load(dir.path()).unwrap_err().to_string();
    assert!(e.contains("encoder.layer.9.output.dense.weight"), "{e}");
}

#[test]
fn half_precision_weights_load_as_float32_and_integer_ones_are_refused() {
    let (dir, _) = tiny_model_dir(15);
    let texts = ["a man is eating food .", "the quick brown fox"];
    let want = SentenceEncoder::load(dir.path())
        .expect("load float32")
        .embed(&texts)
        .expect("embed");
    edit_weights(dir.path(), |w| {
        for a in w.values_mut() {
            *a = a.astype(ferrox::DType::Float16).expect("cast");
        }
    });
    let got = SentenceEncoder::load(dir.path())
        .expect("load float16")
        .embed(&texts)
        .expect("embed");
    for (g, w) in got.iter().zip(&want) {
        let d = cosine_distance(g, w);
        assert!(d < 1e-3, "float16 weights: cosine distance {d}");
    }
    let name = "encoder.layer.0.output.dense.bias";
    edit_weights(dir.path(), |w| {
        w.insert(
            name.into(),
            ferrox::zeros(&[16], ferrox::DType::Int32).expect("zeros"),
        );
    });
    let e = SentenceEncoder::load(dir.path()).unwrap_err().to_string();
    assert!(e.contains(name) && e.contains("int32"), "{e}");
}

#[test]
fn bad_configs_and_tokenizers_name_their_file() {
    let (dir, _) = tiny_model_dir(11);
    std::fs::write(dir.path().join("tokenizer.json"), "{not json").expect("write");
    let e = SentenceEncoder::load(dir.path()).unwrap_err().to_string();
    assert!(e.contains("tokenizer.json"), "{e}");

    let (dir, _) = tiny_model_dir(12);
    std::fs::write(
        dir.path().join("sentence_bert_config.json"),
        r#"{"max_seq_length": 1000}"#,
    )
    .expect("write");
    let e = SentenceEncoder::load(dir.path()).unwrap_err().to_string();
    assert!(
        e.contains("sentence_bert_config.json") && e.contains("1000"),
        "{e}"
    );

    let (dir, _) = tiny_model_dir(13);
    let config = std::fs::read_to_string(dir.path().join("config.json")).expect("read");
    let config = config.replace("\"gelu\"", "\"gelu_new\"");
    std::fs::write(dir.path().join("config.json"), config).expect("write");
    let e = SentenceEncoder::load(dir.path()).unwrap_err().to_string();
    assert!(e.contains("config.json") && e.contains("gelu_new"), "{e}");

    let (dir, _) = tiny_model_dir(14);
    std::fs::create_dir(dir.path().join("1_Pooling")).expect("mkdir");
    std::fs::write(
        dir.path().join("1_Pooling").join("config.json"),
        r#"{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#,
    )
    .expect("write");
    let e = SentenceEncoder::load(dir.path()).unwrap_err().to_string();
    assert!(e.contains("mean pooling"), "{e}");
}

// ------------------------------------------------------------- real model

#[derive(Deserialize)]
struct Fixture {
    max_seq_length: usize,
    dims: usize,
    sentences: Vec<FixtureSentence>,
}

#[derive(Deserialize)]
struct FixtureSentence {
    text: String,
    ids: Vec<u32>,
    embedding: Vec<f32>,
}

fn fixture() -> Fixture {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/minilm.json");
    let text = std::fs::read_to_string(&path).expect("read fixtures/minilm.json");
    serde_json::from_str(&text).expect("parse fixtures/minilm.json")
}

/// The model directory, or `None` (with a message) when the test is to
/// be skipped.
fn minilm_dir(test: &str) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("FERROX_MINILM_DIR") {
        return Some(PathBuf::from(dir));
    }
    if std::env::var("FERROX_REQUIRE_MINILM").as_deref() == Ok("1") {
        panic!("FERROX_REQUIRE_MINILM=1 but FERROX_MINILM_DIR is not set");
    }
    eprintln!(
        "SKIPPED {test}: set FERROX_MINILM_DIR to the all-MiniLM-L6-v2 directory \
         (export FERROX_MINILM_DIR=\"$(scripts/fetch-minilm.sh)\") to run it"
    );
    None
}

/// The real encoder, loaded once for every test of this file, with a guard
/// that keeps the other tests off it while the caller runs: a test counts
/// the encoder's traces, and another test's new bucket would add one.
fn minilm(test: &str) -> Option<(MutexGuard<'static, ()>, Arc<SentenceEncoder>)> {
    static ENCODER: OnceLock<Arc<SentenceEncoder>> = OnceLock::new();
    static IN_USE: Mutex<()> = Mutex::new(());
    let dir = minilm_dir(test)?;
    // A test that failed while holding the guard leaves it poisoned; the
    // encoder itself is still fine to use.
    let guard = IN_USE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let enc = ENCODER
        .get_or_init(|| Arc::new(SentenceEncoder::load(&dir).expect("load all-MiniLM-L6-v2")))
        .clone();
    Some((guard, enc))
}

#[test]
fn minilm_matches_sentence_transformers() {
    let Some((_in_use, enc)) = minilm("minilm_matches_sentence_transformers") else {
        return;
    };
    let fx = fixture();
    assert_eq!(enc.dims(), fx.dims);
    assert_eq!(enc.max_tokens(), fx.max_seq_length);
    let texts: Vec<&str> = fx.sentences.iter().map(|s| s.text.as_str()).collect();
    let batch = enc.embed(&texts).expect("embed the fixture batch");
    let (mut worst, mut worst_batch) = (0.0f64, 0.0f32);
    for (s, b) in fx.sentences.iter().zip(&batch) {
        assert_eq!(
            enc.tokenize(&s.text).expect("tokenize"),
            s.ids,
            "{:?}",
            s.text
        );
        let alone = enc.embed(&[&s.text]).expect("embed one");
        let d = cosine_distance(&alone[0], &s.embedding);
        let start: String = s.text.chars().take(40).collect();
        eprintln!("{d:.3e}  {:3} tokens  {start:?}", s.ids.len());
        assert!(d < 1e-5, "{:?}: cosine distance {d:e}", s.text);
        worst = worst.max(d);
        worst_batch = worst_batch.max(max_abs_diff(b, &alone[0]));
    }
    eprintln!(
        "max cosine distance to sentence-transformers {worst:.3e}; \
         max |batched - alone| {worst_batch:.3e}"
    );
    assert!(
        worst_batch < 1e-5,
        "batched and alone differ by {worst_batch}"
    );
}

#[test]
fn minilm_threads_share_one_encoder() {
    let Some((_in_use, enc)) = minilm("minilm_threads_share_one_encoder") else {
        return;
    };
    // The fixture's texts but the long one (a 40-token bucket, not 256:
    // the unoptimised test build stays quick).
    let texts: Vec<String> = fixture()
        .sentences
        .into_iter()
        .filter(|s| s.ids.len() <= 64)
        .map(|s| s.text)
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let want = enc.embed(&refs).expect("embed");
    let traces = enc.traces();
    let got = embed_concurrently(enc.clone(), texts, 4);
    for g in &got {
        assert_eq!(g, &want, "a thread's vectors differ");
    }
    assert_eq!(enc.traces(), traces, "the threads replayed the warm traces");
}

#[test]
fn minilm_with_a_missing_weight_is_an_error_naming_it() {
    let Some(dir) = minilm_dir("minilm_with_a_missing_weight_is_an_error_naming_it") else {
        return;
    };
    let copy = tempfile::tempdir().expect("a temporary directory");
    copy_dir_files(&dir, copy.path(), &["model.safetensors"]);
    let (mut weights, _) =
        ferrox::io::safetensors::load(dir.join("model.safetensors")).expect("load weights");
    let name = "encoder.layer.3.attention.self.key.weight";
    assert!(weights.remove(name).is_some());
    ferrox::io::save_safetensors(copy.path().join("model.safetensors"), &weights, None)
        .expect("write the edited copy");
    let e = SentenceEncoder::load(copy.path()).unwrap_err().to_string();
    assert!(e.contains(name) && e.contains("missing 1 weights"), "{e}");
}
