//! Helpers the crate's unit tests share.

use std::path::PathBuf;

use bytes::Bytes;

use crate::game::DatagramSink;

/// A file in the system's temporary directory holding `text`, removed when dropped; its
/// name is unique to this process and thread.
pub(crate) struct ScratchFile(pub PathBuf);

impl ScratchFile {
    pub(crate) fn new(name: &str, text: &str) -> ScratchFile {
        let path = std::env::temp_dir().join(format!(
            "server-test-{}-{:?}-{name}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::write(&path, text).unwrap();
        ScratchFile(path)
    }
}

impl Drop for ScratchFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A session's datagram sink that takes nothing.
pub(crate) struct NoSink;

impl DatagramSink for NoSink {
    fn max_datagram_size(&self) -> Option<usize> {
        None
    }
    fn send_space(&self) -> usize {
        0
    }
    fn send(&self, _: Bytes) -> bool {
        false
    }
}
