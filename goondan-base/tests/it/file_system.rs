//! `file-system`: real files, through the executor (BASE-2, CTX-3).

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use goondan_base::{FileSystem, FsPolicy};
use goondan_runtime::testing::{ResultAssertions, TestKit};
use goondan_runtime::{IntoTool, ToolCallResult};
use serde_json::{Value, json};

const SECRET: &str = "TOP-SECRET-OUTSIDE";

struct Fixture {
    kit: TestKit,
    outside: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        Self::with_policy(FsPolicy::default())
    }

    fn with_policy(policy: FsPolicy) -> Self {
        let kit = TestKit::with_tools([FileSystem::new(policy).into_tool()]).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), SECRET).unwrap();
        let w = kit.workdir();
        std::fs::create_dir_all(w.join("data")).unwrap();
        std::fs::create_dir_all(w.join("sub")).unwrap();
        std::fs::write(w.join("data/file.txt"), "inside").unwrap();
        symlink(outside.path(), w.join("out_dir")).unwrap();
        symlink(outside.path().join("secret.txt"), w.join("out_file")).unwrap();
        symlink(
            relative_to(w, &outside.path().join("secret.txt")),
            w.join("rel_out"),
        )
        .unwrap();
        symlink("../..", w.join("sub/up")).unwrap();
        symlink("chain2", w.join("chain1")).unwrap();
        symlink("rel_out", w.join("chain2")).unwrap();
        symlink("/proc/self/root", w.join("proc_root")).unwrap();
        symlink("data/file.txt", w.join("in_link")).unwrap();
        symlink("../data", w.join("sub/back")).unwrap();
        Self { kit, outside }
    }

    async fn call(&self, export: &str, args: Value) -> ToolCallResult {
        self.kit.call(&format!("file-system__{export}"), args).await
    }

    fn secret_untouched(&self) {
        let text = std::fs::read_to_string(self.outside.path().join("secret.txt")).unwrap();
        assert_eq!(text, SECRET);
        let names: Vec<_> = std::fs::read_dir(self.outside.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["secret.txt"], "nothing was created outside");
    }
}

/// `target` as a path relative to `from` (both absolute, in the same temp dir).
fn relative_to(from: &Path, target: &Path) -> PathBuf {
    let up = from.components().count();
    let mut rel = PathBuf::new();
    for _ in 0..up {
        rel.push("..");
    }
    rel.join(target.strip_prefix("/").unwrap())
}

fn assert_refused(r: &ToolCallResult, code: &str, what: &str) {
    assert!(r.is_error(), "{what}: expected a refusal, got {r:?}");
    assert_eq!(r.error_code(), Some(code), "{what}: {r:?}");
    let text = serde_json::to_string(r).unwrap();
    assert!(!text.contains(SECRET), "{what} leaked the secret");
    if code == "E_PATH_OUTSIDE_WORKDIR" {
        assert!(
            r.error.as_ref().unwrap().suggestion().is_some(),
            "{what}: a suggestion"
        );
    }
}

#[tokio::test]
async fn base_2_escape_attempts_are_refused() {
    let f = Fixture::new();
    let outside_abs = f.outside.path().join("secret.txt");
    let outside_abs = outside_abs.to_str().unwrap();
    let deep_dots = format!("{}etc/passwd", "../".repeat(40));
    let workdir_abs = format!("{}/data/file.txt", f.kit.workdir().display());
    let outside_code = "E_PATH_OUTSIDE_WORKDIR";
    let reads: Vec<(&str, &str)> = vec![
        ("..", outside_code),
        ("../", outside_code),
        ("../secret.txt", outside_code),
        ("../../etc/passwd", outside_code),
        ("./../x", outside_code),
        ("a/../../x", outside_code),
        (&deep_dots, outside_code),
        ("/etc/passwd", outside_code),
        ("/", outside_code),
        (outside_abs, outside_code),
        (&workdir_abs, outside_code),
        ("//etc/passwd", outside_code),
        ("/proc/self/root/etc/passwd", outside_code),
        ("out_file", outside_code),
        ("out_dir/secret.txt", outside_code),
        ("rel_out", outside_code),
        ("chain1", outside_code),
        ("sub/up/etc/passwd", outside_code),
        ("proc_root/etc/passwd", outside_code),
        ("data/../../x", outside_code),
        ("a\0b", "E_PATH_INVALID"),
        ("data/file.txt\0/../../etc/passwd", "E_PATH_INVALID"),
        ("", "E_PATH_INVALID"),
        ("data/../data/file.txt", "E_PATH_INVALID"),
    ];
    let long = "a/".repeat(3000);
    let mut count = 0;
    for (path, code) in reads
        .iter()
        .copied()
        .chain([(long.as_str(), "E_PATH_INVALID")])
    {
        let r = f.call("read", json!({"path": path})).await;
        assert_refused(&r, code, &format!("read {path:?}"));
        count += 1;
    }
    let writes = [
        "../escape.txt",
        "/tmp/goondan-escape.txt",
        "out_dir/new.txt",
        "out_file",
        "rel_out",
        "chain1",
        "sub/up/escape.txt",
    ];
    for path in writes {
        let r = f
            .call("write", json!({"path": path, "content": "pwned"}))
            .await;
        assert_refused(&r, outside_code, &format!("write {path}"));
        let r = f
            .call(
                "write",
                json!({"path": path, "content": "pwned", "append": true}),
            )
            .await;
        assert_refused(&r, outside_code, &format!("append {path}"));
        count += 2;
    }
    for path in ["..", "/", "out_dir", "sub/up", "proc_root"] {
        let r = f.call("list", json!({"path": path})).await;
        assert_refused(&r, outside_code, &format!("list {path}"));
        count += 1;
    }
    for path in [
        "../newdir",
        "out_dir/newdir",
        "sub/up/newdir",
        "/tmp/newdir",
    ] {
        let r = f.call("mkdir", json!({"path": path})).await;
        assert_refused(&r, outside_code, &format!("mkdir {path}"));
        count += 1;
    }
    assert!(count >= 25, "{count} attempts");
    f.secret_untouched();
    assert!(!Path::new("/tmp/goondan-escape.txt").exists());
}

#[tokio::test]
async fn base_2_unicode_look_alikes_and_odd_spellings_stay_inside() {
    let f = Fixture::new();
    // These are ordinary file names, not `..`: they must neither escape nor read the secret.
    for path in [
        "\u{ff0e}\u{ff0e}/secret.txt",
        "\u{2024}\u{2024}/secret.txt",
        "..\u{2215}secret.txt",
        "..\\..\\secret.txt",
        "%2e%2e/secret.txt",
        "~/secret.txt",
        "file:///etc/passwd",
    ] {
        let r = f.call("read", json!({"path": path})).await;
        assert_refused(&r, "E_FS_NOT_FOUND", &format!("read {path}"));
        let r = f.call("write", json!({"path": path, "content": "x"})).await;
        let out = r.assert_ok();
        assert!(
            f.kit
                .workdir()
                .join(out["path"].as_str().unwrap())
                .is_file(),
            "{path}"
        );
    }
    f.secret_untouched();
}

#[tokio::test]
async fn base_2_a_link_swapped_between_check_and_use_never_escapes() {
    let f = Fixture::new();
    let w = f.kit.workdir().to_path_buf();
    std::fs::write(w.join("inside.txt"), "INSIDE").unwrap();
    let secret = f.outside.path().join("secret.txt");
    symlink("inside.txt", w.join("swap")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let stop = Arc::clone(&stop);
        let w = w.clone();
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let tmp = w.join(format!(".swap-{n}"));
                let target: &Path = if n.is_multiple_of(2) {
                    &secret
                } else {
                    Path::new("inside.txt")
                };
                symlink(target, &tmp).unwrap();
                std::fs::rename(&tmp, w.join("swap")).unwrap();
                n += 1;
            }
            n
        })
    };
    let (mut inside, mut refused) = (0, 0);
    for _ in 0..300 {
        let r = f.call("read", json!({"path": "swap"})).await;
        if r.is_ok() {
            assert_eq!(r.assert_ok()["content"], "INSIDE");
            inside += 1;
        } else {
            assert_refused(&r, "E_PATH_OUTSIDE_WORKDIR", "swapped read");
            refused += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    assert!(flips > 10, "the link flipped {flips} times");
    assert_eq!(inside + refused, 300);
    f.secret_untouched();
}

#[tokio::test]
async fn base_2_write_then_read_nested_and_through_inside_links() {
    let f = Fixture::new();
    let r = f
        .call(
            "write",
            json!({"path": "a/b/c/note.md", "content": "hello 세계"}),
        )
        .await;
    r.assert_output(json!({"path": "a/b/c/note.md", "size": 12, "written": true}));
    let r = f.call("read", json!({"path": "./a/b/c/note.md"})).await;
    r.assert_output(
        json!({"path": "a/b/c/note.md", "size": 12, "truncated": false, "content": "hello 세계"}),
    );

    let r = f
        .call(
            "write",
            json!({"path": "a/b/c/note.md", "content": "!", "append": true}),
        )
        .await;
    assert_eq!(r.assert_ok()["size"], 13);
    let r = f.call("read", json!({"path": "a/b/c/note.md"})).await;
    assert_eq!(r.assert_ok()["content"], "hello 세계!");

    // Links that stay inside work.
    let r = f.call("read", json!({"path": "in_link"})).await;
    assert_eq!(r.assert_ok()["content"], "inside");
    let r = f.call("read", json!({"path": "sub/back/file.txt"})).await;
    assert_eq!(r.assert_ok()["content"], "inside");
    let r = f
        .call("write", json!({"path": "in_link", "content": "replaced"}))
        .await;
    r.assert_ok();

    // Overwrites leave no temporary file behind.
    let names: Vec<String> = std::fs::read_dir(f.kit.workdir().join("a/b/c"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["note.md"]);
}

#[tokio::test]
async fn base_2_read_is_capped_on_a_utf8_boundary_and_reads_only_that() {
    let f = Fixture::new();
    std::fs::write(f.kit.workdir().join("ko.txt"), "가나다").unwrap();
    let r = f
        .call("read", json!({"path": "ko.txt", "maxBytes": 4}))
        .await;
    r.assert_output(json!({"path": "ko.txt", "size": 9, "truncated": true, "content": "가"}));
    let r = f
        .call("read", json!({"path": "ko.txt", "maxBytes": 0}))
        .await;
    assert_eq!(r.assert_ok()["content"], "");

    // A 4 GiB sparse file: only the first 100000 bytes are read, quickly.
    let big = std::fs::File::create(f.kit.workdir().join("big.bin")).unwrap();
    big.set_len(4 << 30).unwrap();
    let started = Instant::now();
    let r = f.call("read", json!({"path": "big.bin"})).await;
    let out = r.assert_ok();
    assert_eq!(out["size"], 4u64 << 30);
    assert_eq!(out["truncated"], true);
    assert_eq!(out["content"].as_str().unwrap().len(), 100_000);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn base_2_missing_files_and_wrong_kinds_are_errors() {
    let f = Fixture::new();
    f.call("read", json!({"path": "missing.txt"}))
        .await
        .assert_error("E_FS_NOT_FOUND");
    f.call("read", json!({"path": "data"}))
        .await
        .assert_error("E_FS_NOT_A_FILE");
    f.call("write", json!({"path": "data", "content": "x"}))
        .await
        .assert_error("E_FS_NOT_A_FILE");
    f.call("write", json!({"path": ".", "content": "x"}))
        .await
        .assert_error("E_FS_NOT_A_FILE");
    f.call("list", json!({"path": "data/file.txt"}))
        .await
        .assert_error("E_FS_NOT_A_DIRECTORY");
    f.call("mkdir", json!({"path": "data/file.txt"}))
        .await
        .assert_error("E_FS_NOT_A_DIRECTORY");
    f.call("read", json!({"path": "x", "maxBytes": -1}))
        .await
        .assert_error("E_TOOL_INVALID_ARGS");
    // A FIFO does not hang the call.
    let status = std::process::Command::new("mkfifo")
        .arg(f.kit.workdir().join("pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    f.call("read", json!({"path": "pipe"}))
        .await
        .assert_error("E_FS_NOT_A_FILE");
}

#[tokio::test]
async fn base_2_list_and_mkdir() {
    let f = Fixture::new();
    let r = f.call("mkdir", json!({"path": "x/y/z"})).await;
    r.assert_output(json!({"path": "x/y/z", "created": true}));
    let r = f.call("mkdir", json!({"path": "x/y/z"})).await;
    r.assert_output(json!({"path": "x/y/z", "created": false}));

    let r = f.call("list", json!({})).await;
    let out = r.assert_ok();
    assert_eq!(out["path"], ".");
    let entries = out["entries"].as_array().unwrap();
    let find = |p: &str| entries.iter().find(|e| e["path"] == p).cloned();
    assert_eq!(find("data").unwrap()["type"], "dir");
    assert_eq!(find("out_dir").unwrap()["type"], "symlink");
    assert!(find("x/y").is_none(), "not recursive by default");

    let r = f
        .call("list", json!({"path": "x", "recursive": true}))
        .await;
    let paths: Vec<&str> = r.assert_ok()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["x/y", "x/y/z"]);

    // Recursion does not follow links out.
    let r = f.call("list", json!({"recursive": true})).await;
    let text = serde_json::to_string(r.assert_ok()).unwrap();
    assert!(!text.contains("secret.txt"));
}

#[tokio::test]
async fn base_2_list_is_bounded() {
    let f = Fixture::with_policy(FsPolicy {
        max_list_entries: 5,
        ..FsPolicy::default()
    });
    for n in 0..10 {
        std::fs::write(f.kit.workdir().join(format!("data/f{n}")), "").unwrap();
    }
    let r = f.call("list", json!({"path": "data"})).await;
    let out = r.assert_ok();
    assert_eq!(out["truncated"], true);
    assert_eq!(out["entries"].as_array().unwrap().len(), 5);
}

/// The bytes and modification time of a file, to prove it did not change.
fn snapshot(path: &Path) -> (Vec<u8>, std::time::SystemTime) {
    let meta = std::fs::metadata(path).unwrap();
    (std::fs::read(path).unwrap(), meta.modified().unwrap())
}

#[tokio::test]
async fn hardlink_outside_workdir_is_never_read_or_changed() {
    use std::os::unix::fs::MetadataExt;
    let f = Fixture::new();
    let outside = f.outside.path().join("secret.txt");
    let link = f.kit.workdir().join("link.txt");
    std::fs::hard_link(&outside, &link).unwrap();
    let before = snapshot(&outside);

    let r = f.call("read", json!({"path": "link.txt"})).await;
    assert_refused(&r, "E_PATH_HARDLINK", "read");
    assert!(r.error.as_ref().unwrap().suggestion().is_some());
    let r = f
        .call("read", json!({"path": "link.txt", "maxBytes": 3}))
        .await;
    assert_refused(&r, "E_PATH_HARDLINK", "a short read");
    let r = f
        .call(
            "write",
            json!({"path": "link.txt", "content": "APPENDED", "append": true}),
        )
        .await;
    assert_refused(&r, "E_PATH_HARDLINK", "append");
    // A hard link inside the workdir is refused the same way: the rule is about the file.
    std::fs::hard_link(
        f.kit.workdir().join("data/file.txt"),
        f.kit.workdir().join("twin"),
    )
    .unwrap();
    let r = f.call("read", json!({"path": "twin"})).await;
    assert_refused(&r, "E_PATH_HARDLINK", "an inside twin");
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(
        snapshot(&outside),
        before,
        "the outside file did not change"
    );

    // Replacing the name with an atomic write is allowed and leaves the outside file alone.
    let r = f
        .call("write", json!({"path": "link.txt", "content": "fresh"}))
        .await;
    r.assert_output(json!({"path": "link.txt", "size": 5, "written": true}));
    assert_eq!(
        snapshot(&outside),
        before,
        "the outside file did not change"
    );
    assert_eq!(std::fs::metadata(&outside).unwrap().nlink(), 1);
    let r = f.call("read", json!({"path": "link.txt"})).await;
    assert_eq!(r.assert_ok()["content"], "fresh");
    let r = f
        .call(
            "write",
            json!({"path": "link.txt", "content": "+more", "append": true}),
        )
        .await;
    r.assert_ok();
    assert_eq!(std::fs::read_to_string(&link).unwrap(), "fresh+more");
    assert_eq!(
        snapshot(&outside),
        before,
        "the outside file did not change"
    );
    f.secret_untouched();
}

#[tokio::test]
async fn list_reports_truncated_when_the_depth_bound_cuts_the_walk() {
    let f = Fixture::with_policy(FsPolicy {
        max_list_depth: 1,
        ..FsPolicy::default()
    });
    let w = f.kit.workdir();
    std::fs::create_dir_all(w.join("t/a/b/c")).unwrap();
    std::fs::write(w.join("t/a/b/c/deep.txt"), "x").unwrap();
    let paths = |r: &ToolCallResult| -> Vec<String> {
        r.assert_ok()["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["path"].as_str().unwrap().to_owned())
            .collect()
    };
    let r = f
        .call("list", json!({"path": "t", "recursive": true}))
        .await;
    assert_eq!(paths(&r), ["t/a", "t/a/b"]);
    assert_eq!(r.assert_ok()["truncated"], true, "t/a/b was not listed");

    // Within the bound, or an empty directory at the bound: nothing was cut.
    let r = f
        .call("list", json!({"path": "t/a/b", "recursive": true}))
        .await;
    assert_eq!(paths(&r), ["t/a/b/c", "t/a/b/c/deep.txt"]);
    assert_eq!(r.assert_ok()["truncated"], false);
    std::fs::remove_file(w.join("t/a/b/c/deep.txt")).unwrap();
    let r = f
        .call("list", json!({"path": "t/a", "recursive": true}))
        .await;
    assert_eq!(paths(&r), ["t/a/b", "t/a/b/c"]);
    assert_eq!(r.assert_ok()["truncated"], false);
    // Not recursive: subdirectories are left out on request, not cut.
    let r = f.call("list", json!({"path": "t"})).await;
    assert_eq!(paths(&r), ["t/a"]);
    assert_eq!(r.assert_ok()["truncated"], false);
}

/// Upstream's `includeDirs` / `includeFiles` (BASE-5: the same parameters as the base package).
#[tokio::test]
async fn base_5_list_include_dirs_and_files_filter_the_entries() {
    let f = Fixture::new();
    let w = f.kit.workdir();
    std::fs::create_dir_all(w.join("t/d/e")).unwrap();
    std::fs::write(w.join("t/a.txt"), "a").unwrap();
    std::fs::write(w.join("t/d/b.txt"), "b").unwrap();
    let paths = |r: ToolCallResult| -> Vec<String> {
        r.assert_ok()["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["path"].as_str().unwrap().to_owned())
            .collect()
    };
    let all = json!({"path": "t", "recursive": true});
    assert_eq!(
        paths(f.call("list", all).await),
        ["t/a.txt", "t/d", "t/d/b.txt", "t/d/e"]
    );
    let files = json!({"path": "t", "recursive": true, "includeDirs": false});
    assert_eq!(paths(f.call("list", files).await), ["t/a.txt", "t/d/b.txt"]);
    let dirs = json!({"path": "t", "recursive": true, "includeFiles": false});
    assert_eq!(paths(f.call("list", dirs).await), ["t/d", "t/d/e"]);
}

/// Upstream's `mkdir {recursive}`: true by default; false needs the parent to exist.
#[tokio::test]
async fn base_5_mkdir_without_recursive_needs_the_parent() {
    let f = Fixture::new();
    let w = f.kit.workdir().to_path_buf();
    let r = f
        .call("mkdir", json!({"path": "p/q/r", "recursive": false}))
        .await;
    assert!(r.is_error(), "{r:?}");
    assert!(!w.join("p").exists());
    f.call("mkdir", json!({"path": "p", "recursive": false}))
        .await
        .assert_ok();
    assert!(w.join("p").is_dir());
    f.call("mkdir", json!({"path": "x/y/z"})).await.assert_ok();
    assert!(w.join("x/y/z").is_dir());
}

#[tokio::test]
async fn append_to_a_fifo_is_refused_without_blocking() {
    let f = Fixture::new();
    let pipe = f.kit.workdir().join("pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .unwrap();
    assert!(status.success());
    let call = f.call(
        "write",
        json!({"path": "pipe", "content": "x", "append": true}),
    );
    let Ok(r) = tokio::time::timeout(Duration::from_secs(10), call).await else {
        // Release the writer blocked in `open` before failing, so the runtime can shut down.
        use std::os::unix::fs::OpenOptionsExt;
        let _reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NONBLOCK)
            .open(&pipe);
        panic!("appending to a FIFO nobody reads hung the call");
    };
    r.assert_error("E_FS_NOT_A_FILE");
}

/// The name `swap` of the workdir is replaced in a loop, by rename, with a fresh private file,
/// a hard link to the outside file, or a symbolic link to it, while the tool reads and appends
/// through it. The outside file is never read or changed, whatever the timing.
#[tokio::test]
async fn a_name_swapped_to_an_outside_file_during_a_call_never_reaches_it() {
    let f = Fixture::new();
    let w = f.kit.workdir().to_path_buf();
    let secret = f.outside.path().join("secret.txt");
    let before = snapshot(&secret);
    std::fs::write(w.join("swap"), "INSIDE").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swapped = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let swapper = {
        let (stop, w, secret) = (Arc::clone(&stop), w.clone(), secret.clone());
        let swapped = Arc::clone(&swapped);
        std::thread::spawn(move || {
            let tmp = w.join(".swap-next");
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                match n % 3 {
                    0 => std::fs::hard_link(&secret, &tmp).unwrap(),
                    1 => std::fs::write(&tmp, "INSIDE").unwrap(),
                    _ => symlink(&secret, &tmp).unwrap(),
                }
                std::fs::rename(&tmp, w.join("swap")).unwrap();
                n += 1;
                swapped.store(n, Ordering::Relaxed);
            }
            n
        })
    };
    // At least 3,000 calls, and on to 1,000 swaps on a busy machine, within a minute.
    let started = Instant::now();
    let (mut read, mut appended, mut refused) = (0, 0, 0);
    for n in 0.. {
        let enough = n >= 3000 && swapped.load(Ordering::Relaxed) >= 1000;
        if enough || started.elapsed() > Duration::from_secs(60) {
            break;
        }
        let r = if n % 2 == 0 {
            f.call("read", json!({"path": "swap"})).await
        } else {
            f.call(
                "write",
                json!({"path": "swap", "content": "+", "append": true}),
            )
            .await
        };
        if r.is_ok() {
            if n % 2 == 0 {
                let out = r.assert_ok();
                let content = out["content"].as_str().unwrap();
                assert!(content.starts_with("INSIDE"), "read {content:?}");
                read += 1;
            } else {
                appended += 1;
            }
        } else {
            let code = r.error_code().unwrap_or_default().to_owned();
            let expected = ["E_PATH_HARDLINK", "E_PATH_OUTSIDE_WORKDIR", "E_FS_CHANGED"];
            assert!(expected.contains(&code.as_str()), "{r:?}");
            assert_refused(&r, &code, "a swapped name");
            refused += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 100, "the name was swapped {swaps} times");
    assert!(
        read > 0 && appended > 0 && refused > 0,
        "{read} {appended} {refused}"
    );
    assert_eq!(snapshot(&secret), before, "the outside file did not change");
}

#[tokio::test]
async fn a_trailing_slash_on_a_file_names_no_directory() {
    let f = Fixture::new();
    for path in ["data/file.txt/", "data/file.txt/."] {
        f.call("read", json!({"path": path}))
            .await
            .assert_error("E_FS_NOT_A_DIRECTORY");
        f.call("write", json!({"path": path, "content": "x"}))
            .await
            .assert_error("E_FS_NOT_A_DIRECTORY");
        f.call(
            "write",
            json!({"path": path, "content": "x", "append": true}),
        )
        .await
        .assert_error("E_FS_NOT_A_DIRECTORY");
    }
    let file = f.kit.workdir().join("data/file.txt");
    assert_eq!(std::fs::read_to_string(file).unwrap(), "inside");
    // A directory with a trailing slash is still not a file.
    f.call("read", json!({"path": "data/"}))
        .await
        .assert_error("E_FS_NOT_A_FILE");
    f.call("write", json!({"path": "fresh/", "content": "x"}))
        .await
        .assert_error("E_FS_NOT_A_FILE");
}

#[tokio::test]
async fn a_name_that_is_not_utf8_is_listed_so_it_can_be_read_back() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let f = Fixture::new();
    let data = f.kit.workdir().join("data");
    std::fs::write(data.join(OsStr::from_bytes(b"bad\xffname")), "BYTES").unwrap();
    // A real UTF-8 name spelled like the escape: listed and read back as itself.
    std::fs::write(data.join("bad\\xffname"), "TEXT").unwrap();
    let r = f.call("list", json!({"path": "data"})).await;
    let paths: Vec<String> = r.assert_ok()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        paths,
        ["data/bad\\\\xffname", "data/bad\\xffname", "data/file.txt"]
    );
    let r = f.call("read", json!({"path": paths[1]})).await;
    assert_eq!(r.assert_ok()["content"], "BYTES");
    assert_eq!(r.assert_ok()["path"], paths[1]);
    let r = f.call("read", json!({"path": paths[0]})).await;
    assert_eq!(r.assert_ok()["content"], "TEXT");
    let r = f
        .call(
            "write",
            json!({"path": paths[1], "content": "+more", "append": true}),
        )
        .await;
    r.assert_ok();
    let bytes = std::fs::read(data.join(OsStr::from_bytes(b"bad\xffname"))).unwrap();
    assert_eq!(bytes, b"BYTES+more");
}

#[tokio::test]
async fn names_and_paths_at_the_kernel_limits_are_written_or_refused_clearly() {
    let f = Fixture::new();
    // The longest name: the temporary file of the write must not be longer.
    let name = "n".repeat(255);
    let r = f
        .call("write", json!({"path": name, "content": "long name"}))
        .await;
    r.assert_ok();
    let r = f.call("read", json!({"path": name})).await;
    assert_eq!(r.assert_ok()["content"], "long name");
    let r = f
        .call("write", json!({"path": "n".repeat(256), "content": "x"}))
        .await;
    let err = r.assert_error("E_PATH_INVALID");
    assert!(err.message().contains("255"), "{err:?}");

    // The longest path (4095 bytes and the NUL make the kernel's 4096), with a short name.
    let dirs = format!("{}/", "d".repeat(200)).repeat(20);
    let deep = format!("{dirs}{}", "f".repeat(4095 - dirs.len()));
    assert_eq!(deep.len(), 4095);
    let r = f
        .call("write", json!({"path": deep, "content": "deep"}))
        .await;
    r.assert_ok();
    let r = f.call("read", json!({"path": deep})).await;
    assert_eq!(r.assert_ok()["content"], "deep");
    let short = format!("{dirs}x");
    let r = f
        .call("write", json!({"path": short, "content": "short"}))
        .await;
    r.assert_ok();
    let too_long = format!("{deep}f");
    let r = f
        .call("write", json!({"path": too_long, "content": "x"}))
        .await;
    let err = r.assert_error("E_PATH_INVALID");
    assert!(err.message().contains("4095"), "{err:?}");
}
