//! The C tests: each program under tests/c/ is compiled with the system C
//! compiler (`cc`), linked against the shared library cargo built for this
//! crate, and run as a subprocess under a watchdog. A program passes when
//! it exits 0 and prints nothing (tests/c/common.h).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The folder holding `libferrox_c.so` for this build.
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("target/<profile>/deps").to_path_buf();
    let candidates = [
        deps.clone(),
        deps.parent().map(Path::to_path_buf).unwrap_or_default(),
    ];
    candidates
        .into_iter()
        .find(|d| d.join("libferrox_c.so").exists())
        .unwrap_or_else(|| panic!("libferrox_c.so not found next to {}", exe.display()))
}

/// Compiles tests/c/<name>.c once; returns the program's path.
fn program(name: &str) -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let out_dir = DIR.get_or_init(|| {
        let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ferrox-c-tests");
        std::fs::create_dir_all(&d).expect("create the C tests' folder");
        d
    });
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = crate_dir.join("tests/c").join(format!("{name}.c"));
    let exe = out_dir.join(name);
    let lib = lib_dir();
    let out = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args([
            "-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-pthread",
        ])
        .arg("-I")
        .arg(crate_dir.join("include"))
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-lferrox_c")
        .arg("-lm")
        .output()
        .expect("run the C compiler `cc`");
    assert!(
        out.status.success(),
        "compiling {}:\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Runs `cmd`, killing it if it runs past `limit` (a deadlock fails the
/// test instead of hanging it).
fn run_with_watchdog(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the C test program");
    let start = Instant::now();
    loop {
        match child.try_wait().expect("poll the C test program") {
            Some(_) => break,
            None if start.elapsed() > limit => {
                let _ = child.kill();
                let out = child
                    .wait_with_output()
                    .expect("collect the killed program");
                panic!(
                    "watchdog: {:?} did not finish within {limit:?}\nstderr:\n{}",
                    cmd.get_program(),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    }
    child
        .wait_with_output()
        .expect("collect the program's output")
}

/// Runs a C test program with `args`: it must exit 0 and print nothing.
fn pass(name: &str, args: &[&str], limit: Duration) {
    let mut cmd = Command::new(program(name));
    cmd.args(args);
    let out = run_with_watchdog(cmd, limit);
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "{name} {args:?}: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn sixteen_threads_race_on_the_first_call_and_trace_once() {
    pass("race", &[], LIMIT);
}

#[test]
fn freeing_a_compiled_closure_on_another_thread_erases_it() {
    pass("free_other", &[], LIMIT);
}

#[test]
fn work_hops_across_threads() {
    pass("hops", &[], LIMIT);
}

#[test]
fn a_callback_calling_compiled_closures_while_traced_does_not_deadlock() {
    pass("nested", &[], LIMIT);
}

#[test]
fn error_statuses_and_messages() {
    pass("errors", &[], LIMIT);
}

#[test]
fn linear_algebra_fft_convolution_and_quantization() {
    pass("numeric", &[], LIMIT);
}

#[test]
fn the_rest_of_mlx_c_ops_random_memory_and_files() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ferrox-c-parity");
    std::fs::create_dir_all(&dir).expect("create the test's folder");
    pass("parity", &[&dir.to_string_lossy()], LIMIT);
}

#[test]
fn exported_functions_checkpoint_and_custom_rules() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ferrox-c-export");
    std::fs::create_dir_all(&dir).expect("create the test's folder");
    pass("export", &[&dir.to_string_lossy()], LIMIT);
}

#[test]
fn lent_buffers_are_read_in_place_and_released_once() {
    pass("lend", &[], LIMIT);
}

#[test]
fn the_whole_api_once() {
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ferrox-c-basic.safetensors");
    pass("basic", &[&file.to_string_lossy()], LIMIT);
}

/// 50 runs each of exiting from `main` and from a worker thread with live
/// async work and live streams: exit 0, nothing printed.
#[test]
fn exit_with_live_work_is_silent_and_zero() {
    let exe = program("exit");
    for mode in ["main", "worker"] {
        for run in 0..50 {
            let mut cmd = Command::new(&exe);
            cmd.arg(mode);
            let out = run_with_watchdog(cmd, Duration::from_secs(30));
            assert!(
                out.status.code() == Some(0) && out.stdout.is_empty() && out.stderr.is_empty(),
                "exit from {mode}, run {run}: {}\nstdout:\n{}\nstderr:\n{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// One short scenario under valgrind memcheck: no invalid reads or writes,
/// no definite leaks (the process's own thread pools are "still reachable"
/// at exit, which memcheck does not count as an error here).
#[test]
fn memcheck_finds_no_invalid_access_and_no_definite_leak() {
    let valgrind = Command::new("valgrind").arg("--version").output();
    if !valgrind.is_ok_and(|o| o.status.success()) {
        println!("skipped: valgrind is not installed");
        return;
    }
    let exe = program("basic");
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ferrox-c-valgrind.safetensors");
    let mut cmd = Command::new("valgrind");
    cmd.args([
        "--tool=memcheck",
        "--error-exitcode=99",
        "--leak-check=full",
        "--errors-for-leak-kinds=definite",
        "--show-leak-kinds=definite",
        "--quiet",
    ])
    .arg(&exe)
    .arg(&file);
    let out = run_with_watchdog(cmd, Duration::from_secs(300));
    assert!(
        out.status.success(),
        "valgrind: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}
