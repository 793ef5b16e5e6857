//! Why an example's run failed, and the exit code it gives: 2 for bad arguments or a size
//! too large, 3 without a GPU, 1 for any other failure.

use std::fmt;

/// Why a run failed, and its exit code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Bad arguments (exit 2).
    #[error("usage: {0}")]
    Usage(String),
    /// A size this machine cannot hold (`--check-free`, exit 2).
    #[error("too large: {0}")]
    TooLarge(String),
    /// No driver, no GPU, a driver too old (exit 3).
    #[error("no GPU: {0}")]
    NoGpu(String),
    /// A CUDA call failed (exit 1).
    #[error("CUDA call {call} failed: {detail}")]
    Cuda { call: &'static str, detail: String },
    /// A call of memtune's GPU foundation (buffers, timing) failed (exit 1).
    #[error("GPU: {0}")]
    Gpu(String),
    /// NVRTC failed on `kernels/{kernel}` (exit 1).
    #[error("compiling kernels/{kernel}: {detail}")]
    Compile {
        kernel: &'static str,
        detail: String,
    },
    /// A plan cannot be launched (exit 1).
    #[error("launch: {0}")]
    Launch(String),
    /// The autotuner failed, or a plan does not fit the data (exit 1).
    #[error("autotune: {0}")]
    Autotune(String),
    /// A plan's result differs from the untuned or the CPU result (exit 1).
    #[error("wrong result: {0}")]
    Mismatch(String),
    /// Writing the JSON or a temporary decision store, or reading /proc/meminfo, failed
    /// (exit 1).
    #[error("{0}")]
    Io(String),
    /// Some bench rows failed; each was reported (exit 1).
    #[error("{0}")]
    Bench(String),
}

impl Error {
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) | Error::TooLarge(_) => 2,
            Error::NoGpu(_) => 3,
            _ => 1,
        }
    }

    /// `map_err(Error::cuda("cuMemAlloc"))`.
    pub fn cuda<E: fmt::Debug>(call: &'static str) -> impl Fn(E) -> Error {
        move |e| Error::Cuda {
            call,
            detail: format!("{e:?}"),
        }
    }
}

impl From<memtune::gpu::Error> for Error {
    fn from(e: memtune::gpu::Error) -> Error {
        Error::Gpu(e.to_string())
    }
}

impl From<memtune::device::DeviceError> for Error {
    fn from(e: memtune::device::DeviceError) -> Error {
        use memtune::device::DeviceError as D;
        match e {
            D::NoDriver | D::NoGpu { .. } | D::DriverTooOld { .. } | D::NoSuchDevice { .. } => {
                Error::NoGpu(e.to_string())
            }
            D::Cuda { call, detail } => Error::Cuda { call, detail },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_exit_codes() {
        let e = Error::cuda("cuMemAlloc")("out of memory");
        assert_eq!(
            e.to_string(),
            "CUDA call cuMemAlloc failed: \"out of memory\""
        );
        assert_eq!(e.exit_code(), 1);
        assert_eq!(Error::Usage("x".into()).exit_code(), 2);
        assert_eq!(Error::TooLarge("x".into()).to_string(), "too large: x");
        assert_eq!(Error::NoGpu("x".into()).exit_code(), 3);
        let e = Error::Compile {
            kernel: "gather.cu",
            detail: "no".into(),
        };
        assert_eq!(e.to_string(), "compiling kernels/gather.cu: no");
        assert_eq!(Error::Bench("2 failed".into()).to_string(), "2 failed");
        let e = Error::from(memtune::device::DeviceError::NoDriver);
        assert_eq!(e.exit_code(), 3);
    }
}
