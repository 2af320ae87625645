//! Builds the LD_PRELOAD interposer (`crates/kbx-preload`, a workspace of
//! its own with `panic = "abort"`) that `kbxscope record` embeds, so that
//! `cargo build --release` and `cargo install --path .` give a working
//! `record` with nothing else to build or install.
//!
//! A nested `cargo build --release --lib` into `$OUT_DIR/preload`; its path
//! reaches the crate as `KBX_PRELOAD_SO` (`include_bytes!` in
//! `src/record/preload.rs`).

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    // The interposer is Linux's (LD_PRELOAD): a build for another system
    // (Windows) has no `record` to embed it in.
    if env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        return;
    }
    let root = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let krate = root.join("crates/kbx-preload");
    for p in ["src", "Cargo.toml", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", krate.join(p).display());
    }
    // The record format the interposer writes (crates/kbx-record, its path
    // dependency) is compiled into it too.
    for p in ["src", "Cargo.toml"] {
        println!("cargo:rerun-if-changed={}", root.join("crates/kbx-record").join(p).display());
    }
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR")).join("preload");
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    // The interposer's settings come on the command line: no unwinding
    // through libc's callers.
    cmd.args([
        "build",
        "--release",
        "--lib",
        "--quiet",
        "--config",
        "profile.release.panic=\"abort\"",
        "--manifest-path",
    ])
    .arg(krate.join("Cargo.toml"))
    .arg("--target-dir")
    .arg(&out);
    // Not clippy's or the outer build's settings: the interposer is built
    // the same way under `cargo build`, `cargo clippy` and `cargo doc`.
    for var in [
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_PROFILE_RELEASE_DEBUG",
    ] {
        cmd.env_remove(var);
    }
    if env::var("CARGO_NET_OFFLINE").is_ok_and(|v| v == "true") {
        cmd.arg("--offline");
    }
    let status = cmd.status().expect("run cargo to build crates/kbx-preload");
    assert!(status.success(), "building crates/kbx-preload failed");
    let so = out.join("release/libkbx_preload.so");
    assert!(so.exists(), "{} was not built", so.display());
    println!("cargo:rustc-env=KBX_PRELOAD_SO={}", so.display());
}
