//! A destination beneath the receiver's `--dir` (`hare-send f HOST:PORT:DEST`): files land
//! under it, it is made when missing, and it can never name a place outside `--dir`.

use hare_transfer::testkit::{recv_options, runtime as rt, send_options, BackgroundReceiver};
use hare_transfer::{send, SendJob, Stop, TransferError};

#[test]
fn files_land_beneath_the_destination_and_nowhere_else() {
    let (id, src, dst) = (
        tempfile::tempdir().expect("t"),
        tempfile::tempdir().expect("t"),
        tempfile::tempdir().expect("t"),
    );
    let recv = BackgroundReceiver::start(recv_options(id.path().into(), Some(dst.path().into())))
        .expect("receiver");
    let f = src.path().join("notes.txt");
    std::fs::write(&f, b"notes").expect("w");
    let outside = tempfile::tempdir().expect("outside");
    std::os::unix::fs::symlink(outside.path(), dst.path().join("lnk")).expect("ln");
    let job = || SendJob::Files {
        paths: vec![f.clone()],
        resume: true,
        force: false,
        parallel: 1,
    };
    let with = |dest: &str| {
        let mut o = send_options(recv.addr, recv.trust(), job());
        o.dest = Some(dest.to_owned());
        rt().block_on(send(o, Stop::never()))
    };
    let out = with("backup/2026").expect("sent");
    assert!(out.files[0].ok);
    assert_eq!(
        std::fs::read(dst.path().join("backup/2026/notes.txt")).expect("landed"),
        b"notes"
    );
    for (dest, why) in [
        ("../up", "destination `../up`: `..` component"),
        ("/etc", "destination `/etc`: absolute path"),
        (
            "lnk/x",
            "lnk/x/notes.txt: lnk is a symbolic link; not followed",
        ),
    ] {
        let err = with(dest).expect_err(dest);
        assert!(
            matches!(&err, TransferError::Refused(r) if r.contains(why)),
            "{dest}: {err}"
        );
    }
    assert_eq!(std::fs::read_dir(outside.path()).expect("ls").count(), 0);
}
