//! A writer for the `newc` cpio format, the format of a Linux initramfs.
//!
//! Just enough of it for an image: directories, regular files and device nodes, all owned by
//! root, with fixed timestamps so that the same inputs give the same bytes.

/// Builds a cpio archive in memory.
#[derive(Default)]
pub struct CpioWriter {
    out: Vec<u8>,
    next_inode: u32,
}

/// File type bits of `st_mode`.
const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFCHR: u32 = 0o020000;

impl CpioWriter {
    fn entry(&mut self, name: &str, mode: u32, data: &[u8], rdev: (u32, u32)) {
        self.next_inode += 1;
        let fields = [
            self.next_inode,
            mode,
            0, // uid
            0, // gid
            if mode & S_IFDIR != 0 { 2 } else { 1 },
            0, // mtime: fixed, for reproducible images
            data.len() as u32,
            0, // dev major
            0, // dev minor
            rdev.0,
            rdev.1,
            name.len() as u32 + 1,
            0, // check
        ];
        self.out.extend_from_slice(b"070701");
        for f in fields {
            self.out.extend_from_slice(format!("{f:08x}").as_bytes());
        }
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(0);
        self.pad();
        self.out.extend_from_slice(data);
        self.pad();
    }

    fn pad(&mut self) {
        while !self.out.len().is_multiple_of(4) {
            self.out.push(0);
        }
    }

    /// Adds a directory (`mode`: permission bits).
    pub fn dir(&mut self, name: &str, mode: u32) {
        self.entry(name, S_IFDIR | mode, &[], (0, 0));
    }

    /// Adds a regular file.
    pub fn file(&mut self, name: &str, mode: u32, data: &[u8]) {
        self.entry(name, S_IFREG | mode, data, (0, 0));
    }

    /// Adds a character device node.
    pub fn char_device(&mut self, name: &str, mode: u32, major: u32, minor: u32) {
        self.entry(name, S_IFCHR | mode, &[], (major, minor));
    }

    /// Ends the archive and returns its bytes.
    pub fn finish(mut self) -> Vec<u8> {
        self.entry("TRAILER!!!", 0, &[], (0, 0));
        // The kernel reads the initramfs in 512-byte blocks.
        while !self.out.len().is_multiple_of(512) {
            self.out.push(0);
        }
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses the entries back (name, mode, data) the way the kernel's unpacker does.
    fn parse(bytes: &[u8]) -> Vec<(String, u32, Vec<u8>)> {
        let mut at = 0;
        let mut entries = Vec::new();
        let field = |b: &[u8], i: usize| {
            u32::from_str_radix(std::str::from_utf8(&b[6 + i * 8..14 + i * 8]).unwrap(), 16)
                .unwrap()
        };
        loop {
            let h = &bytes[at..at + 110];
            assert_eq!(&h[..6], b"070701");
            let (mode, size, namesize) = (field(h, 1), field(h, 6) as usize, field(h, 11) as usize);
            let name =
                String::from_utf8(bytes[at + 110..at + 110 + namesize - 1].to_vec()).unwrap();
            let data_at = (at + 110 + namesize).next_multiple_of(4);
            if name == "TRAILER!!!" {
                return entries;
            }
            entries.push((name, mode, bytes[data_at..data_at + size].to_vec()));
            at = (data_at + size).next_multiple_of(4);
        }
    }

    #[test]
    fn entries_read_back_as_written() {
        let mut w = CpioWriter::default();
        w.dir("dev", 0o755);
        w.char_device("dev/console", 0o600, 5, 1);
        w.file("init", 0o755, b"#!binary");
        w.file("odd", 0o644, b"abc");
        let bytes = w.finish();
        assert_eq!(bytes.len() % 512, 0);
        let entries = parse(&bytes);
        let names: Vec<&str> = entries.iter().map(|e| e.0.as_str()).collect();
        assert_eq!(names, vec!["dev", "dev/console", "init", "odd"]);
        assert_eq!(entries[1].1, S_IFCHR | 0o600);
        assert_eq!(entries[2].2, b"#!binary");
        assert_eq!(entries[3].2, b"abc");
    }
}
