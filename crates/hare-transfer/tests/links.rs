//! `--links`: symbolic links arrive as links with their target text unchanged, and the
//! receiver never writes through one, even a link the same job made.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use hare_transfer::sendfiles::{Keep, Links};
use hare_transfer::testkit::{recv_options, runtime, send_options, BackgroundReceiver};
use hare_transfer::{send, SendJob, SendOutcome, Stop};

fn send_paths(paths: Vec<std::path::PathBuf>, dst: &Path, links: Links) -> SendOutcome {
    send_with(paths, dst, links, None)
}

fn send_with(
    paths: Vec<std::path::PathBuf>,
    dst: &Path,
    links: Links,
    skip: Option<hare_transfer::SkipRule>,
) -> SendOutcome {
    let id = tempfile::tempdir().expect("tempdir");
    let recv = BackgroundReceiver::start(recv_options(id.path().into(), Some(dst.into())))
        .expect("receiver");
    let job = SendJob::Files {
        paths,
        resume: false,
        force: false,
        parallel: 4,
    };
    let mut o = send_options(recv.addr, recv.trust(), job);
    o.keep = Keep {
        links,
        ..Keep::default()
    };
    o.skip = skip;
    runtime()
        .block_on(send(o, Stop::never()))
        .expect("job runs")
}

fn target(p: &Path) -> String {
    std::fs::read_link(p)
        .expect("a symbolic link")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn links_arrive_as_links_relative_absolute_and_dangling() {
    let src = tempfile::tempdir().expect("tempdir");
    let dst = tempfile::tempdir().expect("tempdir");
    let t = src.path().join("t");
    std::fs::create_dir_all(t.join("sub")).expect("mkdir");
    std::fs::write(t.join("data.txt"), b"data").expect("w");
    std::os::unix::fs::symlink("../data.txt", t.join("sub/rel")).expect("ln");
    std::os::unix::fs::symlink("/etc/passwd", t.join("passwd")).expect("ln");
    std::os::unix::fs::symlink("no/such/file", t.join("dangling")).expect("ln");
    let out = send_paths(vec![t.clone()], dst.path(), Links::Keep);
    assert!(out.files.iter().all(|f| f.ok), "{:?}", out.files);
    assert_eq!(out.files.len(), 4, "{:?}", out.files);
    let d = dst.path().join("t");
    for (name, want) in [
        ("sub/rel", "../data.txt"),
        ("passwd", "/etc/passwd"),
        ("dangling", "no/such/file"),
    ] {
        let m = std::fs::symlink_metadata(d.join(name)).expect("lstat");
        assert!(m.file_type().is_symlink(), "{name}");
        assert_eq!(target(&d.join(name)), want, "{name}");
        let src_m = std::fs::symlink_metadata(t.join(name)).expect("lstat");
        assert_eq!(
            (m.mtime(), m.mtime_nsec()),
            (src_m.mtime(), src_m.mtime_nsec()),
            "{name}: the link's own time"
        );
    }
    assert_eq!(std::fs::read(d.join("sub/rel")).expect("through"), b"data");
    // No temporary names are left anywhere.
    let left: Vec<_> = walk(&d)
        .into_iter()
        .filter(|n| n.contains("hare-part"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert!(out.run.summary.expect("summary").completed);
}

#[test]
fn without_links_they_are_skipped_and_with_safe_links_unsafe_ones_are() {
    let src = tempfile::tempdir().expect("tempdir");
    let dst = tempfile::tempdir().expect("tempdir");
    let t = src.path().join("s");
    std::fs::create_dir_all(&t).expect("mkdir");
    std::fs::write(t.join("f"), b"f").expect("w");
    std::os::unix::fs::symlink("f", t.join("near")).expect("ln");
    std::os::unix::fs::symlink("/etc/passwd", t.join("far")).expect("ln");
    let out = send_paths(vec![t.clone()], dst.path(), Links::Safe);
    assert!(out.files.iter().all(|f| f.ok), "{:?}", out.files);
    assert_eq!(target(&dst.path().join("s/near")), "f");
    assert!(std::fs::symlink_metadata(dst.path().join("s/far")).is_err());
    let dst2 = tempfile::tempdir().expect("tempdir");
    let out = send_paths(vec![t], dst2.path(), Links::Skip);
    assert_eq!(out.files.len(), 1);
    assert!(std::fs::symlink_metadata(dst2.path().join("s/near")).is_err());
}

#[test]
fn a_file_below_a_link_of_the_same_job_is_never_written_through_it() {
    let src = tempfile::tempdir().expect("tempdir");
    let dst = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::tempdir().expect("tempdir");
    // The job: a link `d` -> OUTSIDE, then a file `d/x` and an ordinary file `ok`.
    let a = src.path().join("a");
    let b = src.path().join("b");
    std::fs::create_dir_all(b.join("d")).expect("mkdir");
    std::fs::create_dir_all(&a).expect("mkdir");
    std::os::unix::fs::symlink(outside.path(), a.join("d")).expect("ln");
    std::fs::write(b.join("d/x"), b"must not escape").expect("w");
    std::fs::write(b.join("ok"), b"fine").expect("w");
    let out = send_paths(
        vec![a.join("d"), b.join("d"), b.join("ok")],
        dst.path(),
        Links::Keep,
    );
    let by_name = |n: &str| out.files.iter().find(|f| f.name == n).cloned();
    let x = by_name("d/x").expect("d/x reported");
    assert!(!x.ok, "{x:?}");
    let reason = x.reason.unwrap_or_default();
    assert!(
        reason.contains("d is a symbolic link; not followed"),
        "{reason}"
    );
    assert!(by_name("d").is_some_and(|f| f.ok), "{:?}", out.files);
    assert!(by_name("ok").is_some_and(|f| f.ok), "{:?}", out.files);
    assert_eq!(std::fs::read(dst.path().join("ok")).expect("r"), b"fine");
    assert_eq!(
        target(&dst.path().join("d")),
        outside.path().to_string_lossy()
    );
    assert_eq!(
        std::fs::read_dir(outside.path()).expect("ls").count(),
        0,
        "nothing written outside the job's directory"
    );
    assert!(!out.run.summary.expect("summary").completed);
}

fn walk(d: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).expect("ls").flatten() {
        let p = e.path();
        out.push(p.to_string_lossy().into_owned());
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk(&p));
        }
    }
    out
}

#[test]
fn a_receiver_with_safe_links_refuses_unsafe_links_by_name() {
    let src = tempfile::tempdir().expect("tempdir");
    let dst = tempfile::tempdir().expect("tempdir");
    let t = src.path().join("w");
    std::fs::create_dir_all(&t).expect("mkdir");
    std::os::unix::fs::symlink("inside", t.join("near")).expect("ln");
    std::os::unix::fs::symlink("/etc/passwd", t.join("far")).expect("ln");
    let id = tempfile::tempdir().expect("tempdir");
    let mut ro = recv_options(id.path().into(), Some(dst.path().into()));
    ro.limits.safe_links = true;
    let recv = BackgroundReceiver::start(ro).expect("receiver");
    let job = SendJob::Files {
        paths: vec![t],
        resume: false,
        force: false,
        parallel: 1,
    };
    let mut o = send_options(recv.addr, recv.trust(), job);
    o.keep.links = Links::Keep;
    let out = runtime()
        .block_on(send(o, Stop::never()))
        .expect("job runs");
    let failed: Vec<(String, String)> = out
        .failures()
        .map(|f| (f.name.clone(), f.reason.clone().unwrap_or_default()))
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0].0, "w/far");
    assert!(
        failed[0].1.contains("unsafe link to /etc/passwd, skipped"),
        "{failed:?}"
    );
    assert_eq!(target(&dst.path().join("w/near")), "inside");
    assert!(std::fs::symlink_metadata(dst.path().join("w/far")).is_err());
}

/// A rerun (a skip rule) leaves a link with the same target alone and reports it up to date;
/// a link whose target changed is made again.
#[test]
fn a_rerun_leaves_a_current_link_alone_and_remakes_a_changed_one() {
    let src = tempfile::tempdir().expect("tempdir");
    let dst = tempfile::tempdir().expect("tempdir");
    let t = src.path().join("t");
    std::fs::create_dir_all(&t).expect("mkdir");
    std::os::unix::fs::symlink("a", t.join("same")).expect("ln");
    std::os::unix::fs::symlink("b", t.join("moved")).expect("ln");
    let out = send_paths(vec![t.clone()], dst.path(), Links::Keep);
    assert!(out.files.iter().all(|f| f.ok), "{:?}", out.files);
    let d = dst.path().join("t");
    let inode = |n: &str| std::fs::symlink_metadata(d.join(n)).expect("lstat").ino();
    let before = inode("same");
    std::fs::remove_file(t.join("moved")).expect("rm");
    std::os::unix::fs::symlink("c", t.join("moved")).expect("ln");
    let out = rerun(vec![t.clone()], dst.path());
    let report = |n: &str| {
        out.files
            .iter()
            .find(|f| f.name == format!("t/{n}"))
            .unwrap_or_else(|| panic!("{n} reported: {:?}", out.files))
    };
    assert!(report("same").ok && report("same").skipped.as_deref() == Some("up to date"));
    assert!(report("moved").ok && report("moved").skipped.is_none());
    assert_eq!(inode("same"), before, "the current link is not made again");
    assert_eq!(target(&d.join("moved")), "c");
}

/// A rerun of `paths` to `dst`: rsync's quick check, links kept.
fn rerun(paths: Vec<std::path::PathBuf>, dst: &Path) -> SendOutcome {
    send_with(
        paths,
        dst,
        Links::Keep,
        Some(hare_transfer::SkipRule::Quick),
    )
}
