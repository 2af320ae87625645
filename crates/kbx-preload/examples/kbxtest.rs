//! Test workloads for the integration tests: `kbxtest MODE FILE [ARG]`.
//! Each mode does libc calls on FILE and prints a deterministic summary.
//! (Does not link kbx_preload: the hooks come only from LD_PRELOAD.)

use std::ffi::CString;

use libc::{c_char, c_int, c_void};

extern "C" {
    fn closefrom(low: c_int);
}

fn cs(s: &str) -> CString {
    CString::new(s).unwrap()
}

fn open_ro(p: &CString) -> c_int {
    // SAFETY: p is a valid C string.
    let fd = unsafe { libc::open(p.as_ptr(), libc::O_RDONLY) };
    assert!(fd >= 0, "open failed");
    fd
}

fn read_all(fd: c_int, chunk: usize) -> (u64, u64) {
    let mut buf = vec![0u8; chunk];
    let (mut n, mut sum) = (0u64, 0u64);
    loop {
        // SAFETY: buf is writable for chunk bytes.
        let r = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut c_void, chunk) };
        if r <= 0 {
            break;
        }
        n += r as u64;
        sum = buf[..r as usize].iter().fold(sum, |a, &b| a.wrapping_mul(31).wrapping_add(b as u64));
    }
    (n, sum)
}

fn errno() -> c_int {
    // SAFETY: errno location is always valid.
    unsafe { *libc::__errno_location() }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args[1].as_str();
    let path = cs(&args[2]);
    // SAFETY (whole match): plain libc calls on valid arguments.
    unsafe {
        match mode {
            "basic" => {
                let fd = open_ro(&path);
                let mut buf = [0u8; 100];
                println!("read {}", libc::read(fd, buf.as_mut_ptr() as *mut c_void, 100));
                println!("pread {}", libc::pread(fd, buf.as_mut_ptr() as *mut c_void, 50, 1000));
                println!("lseek {}", libc::lseek(fd, 10, libc::SEEK_SET));
                let mut st: libc::stat = std::mem::zeroed();
                println!("fstat {} size {}", libc::fstat(fd, &mut st), st.st_size);
                println!("stat {}", libc::stat(path.as_ptr(), &mut st));
                println!("lstat {}", libc::lstat(path.as_ptr(), &mut st));
                let mut stx: libc::statx = std::mem::zeroed();
                println!("statx {}", libc::statx(libc::AT_FDCWD, path.as_ptr(), 0, libc::STATX_SIZE, &mut stx));
                println!("access {}", libc::access(path.as_ptr(), libc::R_OK));
                let d = libc::dup(fd);
                println!("read dup {}", libc::read(d, buf.as_mut_ptr() as *mut c_void, 10));
                let d2 = libc::dup2(fd, 20);
                println!("read dup2 {}", libc::read(d2, buf.as_mut_ptr() as *mut c_void, 10));
                let d3 = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 30);
                println!("fcntl dup {}", d3);
                println!("read fcntl dup {}", libc::read(d3, buf.as_mut_ptr() as *mut c_void, 10));
                println!("getfl {}", libc::fcntl(fd, libc::F_GETFL) & libc::O_ACCMODE);
                let iov = libc::iovec { iov_base: buf.as_mut_ptr() as *mut c_void, iov_len: 20 };
                println!("readv {}", libc::readv(fd, &iov, 1));
                println!("preadv {}", libc::preadv(fd, &iov, 1, 0));
                let m = libc::mmap(std::ptr::null_mut(), 4096, libc::PROT_READ, libc::MAP_PRIVATE, fd, 0);
                println!("mmap first byte {}", *(m as *const u8));
                libc::munmap(m, 4096);
                for f in [d, d2, d3, fd] {
                    libc::close(f);
                }
                // the numbers are reused by an unwatched file: not counted
                let n = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY);
                println!("devnull read {}", libc::read(n, buf.as_mut_ptr() as *mut c_void, 10));
                libc::close(n);
            }
            "errno" => {
                let fd = libc::open(path.as_ptr(), libc::O_RDONLY);
                println!("open missing {} errno {}", fd, errno());
                assert_eq!((fd, errno()), (-1, libc::ENOENT));
                let mut st: libc::stat = std::mem::zeroed();
                let r = libc::stat(path.as_ptr(), &mut st);
                assert_eq!((r, errno()), (-1, libc::ENOENT));
                let f = libc::fopen(path.as_ptr(), c"r".as_ptr());
                assert!(f.is_null() && errno() == libc::ENOENT);
                let mut buf = [0u8; 4];
                let r = libc::read(77, buf.as_mut_ptr() as *mut c_void, 4);
                assert_eq!((r, errno()), (-1, libc::EBADF));
                // a watched fd, closed, then read
                let real = cs(&args[3]);
                let fd = open_ro(&real);
                libc::close(fd);
                *libc::__errno_location() = 0;
                let r = libc::read(fd, buf.as_mut_ptr() as *mut c_void, 4);
                assert_eq!((r, errno()), (-1, libc::EBADF));
                // success keeps errno untouched
                *libc::__errno_location() = libc::EXDEV;
                let fd = open_ro(&real);
                libc::read(fd, buf.as_mut_ptr() as *mut c_void, 4);
                libc::close(fd);
                assert_eq!(errno(), libc::EXDEV);
                println!("errno ok");
            }
            "fork" => {
                let fd = open_ro(&path);
                let mut buf = [0u8; 64];
                libc::read(fd, buf.as_mut_ptr() as *mut c_void, 64);
                let pid = libc::fork();
                if pid == 0 {
                    let (n, _) = read_all(fd, 1000);
                    libc::close(fd);
                    let fd2 = open_ro(&path);
                    libc::close(fd2);
                    libc::_exit(if n > 0 { 0 } else { 1 });
                }
                let mut st = 0;
                libc::waitpid(pid, &mut st, 0);
                libc::lseek(fd, 0, libc::SEEK_SET);
                let (n, sum) = read_all(fd, 4096);
                println!("parent read {n} {sum} child {st}");
            }
            "exec" => {
                let fd = open_ro(&path);
                let (n, _) = read_all(fd, 8192);
                println!("before exec {n}");
                let exe = cs("/proc/self/exe");
                let argv: [*const c_char; 4] = [exe.as_ptr(), c"after-exec".as_ptr(), path.as_ptr(), std::ptr::null()];
                libc::execv(exe.as_ptr(), argv.as_ptr());
                panic!("exec failed");
            }
            "after-exec" => {
                let fd = open_ro(&path);
                let (n, _) = read_all(fd, 1000);
                libc::close(fd);
                println!("after exec {n}");
            }
            "threads" => {
                let fd = open_ro(&path);
                let hs: Vec<_> = (0..4)
                    .map(|t| {
                        std::thread::spawn(move || {
                            let mut buf = [0u8; 512];
                            let mut got = 0;
                            for i in 0..500 {
                                got += libc::pread(fd, buf.as_mut_ptr() as *mut c_void, 512, (i * 512 + t * 7) as i64);
                            }
                            let f2 = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY);
                            libc::close(f2);
                            got
                        })
                    })
                    .collect();
                let total: isize = hs.into_iter().map(|h| h.join().unwrap()).sum();
                libc::close(fd);
                println!("threads read {total}");
            }
            "daemon" => {
                let done = cs(&args[3]);
                if libc::fork() != 0 {
                    let mut st = 0;
                    libc::wait(&mut st);
                    println!("launcher done");
                    return;
                }
                libc::setsid();
                if libc::fork() != 0 {
                    libc::_exit(0);
                }
                libc::chdir(c"/".as_ptr());
                for fd in 0..1024 {
                    libc::close(fd);
                }
                let fd = open_ro(&path);
                let (n, _) = read_all(fd, 777);
                libc::close(fd);
                let d = libc::open(done.as_ptr(), libc::O_WRONLY | libc::O_CREAT, 0o644);
                let msg = format!("{n}\n");
                libc::write(d, msg.as_ptr() as *const c_void, msg.len());
                libc::close(d);
                libc::_exit(0);
            }
            "close_range" => {
                let fd = open_ro(&path);
                let a = libc::dup(fd);
                let b = libc::dup(fd);
                println!("close_range {}", libc::close_range(fd as u32, u32::MAX, 0));
                let n = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY);
                let mut buf = [0u8; 8];
                for f in [n, a, b] {
                    libc::read(f, buf.as_mut_ptr() as *mut c_void, 8);
                }
                let fd = open_ro(&path);
                libc::read(fd, buf.as_mut_ptr() as *mut c_void, 8);
                closefrom(fd);
                let n2 = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY);
                libc::read(n2, buf.as_mut_ptr() as *mut c_void, 8);
                println!("fds {n} {a} {b} {fd} {n2}");
            }
            "stdio" => {
                let f = libc::fopen(path.as_ptr(), c"rb".as_ptr());
                let mut buf = vec![0u8; 20000];
                let mut out = Vec::new();
                out.push(libc::fread(buf.as_mut_ptr() as *mut c_void, 4, 1, f));
                out.push(libc::fread(buf.as_mut_ptr() as *mut c_void, 4, 1, f));
                out.push(libc::fgets(buf.as_mut_ptr() as *mut c_char, 100, f).is_null() as usize);
                let mut csum = 0usize;
                for _ in 0..5000 {
                    csum = csum.wrapping_mul(31).wrapping_add(libc::fgetc(f) as usize);
                }
                out.push(csum);
                out.push(libc::fread(buf.as_mut_ptr() as *mut c_void, 1, 10000, f));
                if std::env::var_os("KBXTEST_DEBUG").is_some() {
                    eprintln!("_offset before ftell {}", *((f as *const u8).add(144) as *const i64));
                }
                out.push(libc::ftell(f) as usize);
                out.push(libc::fseek(f, 100, libc::SEEK_SET) as usize);
                out.push(libc::fread(buf.as_mut_ptr() as *mut c_void, 1, 50, f));
                out.push(libc::fseek(f, 120, libc::SEEK_SET) as usize);
                out.push(libc::fseek(f, -10, libc::SEEK_END) as usize);
                out.push(libc::fread(buf.as_mut_ptr() as *mut c_void, 1, 50, f));
                out.push(libc::fread(buf.as_mut_ptr() as *mut c_void, 1, 50, f));
                libc::rewind(f);
                let mut line: *mut c_char = std::ptr::null_mut();
                let mut cap = 0usize;
                out.push(libc::getline(&mut line, &mut cap, f) as usize);
                let mut total = 0usize;
                loop {
                    let r = libc::fread(buf.as_mut_ptr() as *mut c_void, 1, 3000, f);
                    total += r;
                    if r == 0 {
                        break;
                    }
                }
                out.push(total);
                out.push(libc::fread(buf.as_mut_ptr() as *mut c_void, 1, 3000, f));
                out.push(libc::fread(buf.as_mut_ptr() as *mut c_void, 1, 9000, f));
                libc::fclose(f);
                println!("stdio {out:?}");
            }
            other => panic!("unknown mode {other}"),
        }
    }
}
