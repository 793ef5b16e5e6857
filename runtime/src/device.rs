//! Device identity through the CUDA driver API (cudarc, loaded at run time).
//!
//! The driver library is probed before any other call, so a machine without a driver gets
//! an error rather than cudarc's panic, and the driver's version is checked before any
//! CUDA 13 entry point is touched.

use cudarc::driver::{result, sys};
use memtune_core::profile::{format_uuid, ComputeCapability, DeviceIdentity};

/// The oldest driver API this build uses: CUDA 13.0.
pub const REQUIRED_DRIVER_VERSION: i32 = 13000;

#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error("no CUDA driver: libcuda.so.1 could not be loaded; install the NVIDIA driver (R580 or newer), or run on a machine with a GPU")]
    NoDriver,
    #[error("no CUDA GPU is visible ({detail}); check `nvidia-smi` and CUDA_VISIBLE_DEVICES")]
    NoGpu { detail: String },
    #[error("the CUDA driver supports CUDA {found}, but memtune needs {required} or newer; update the NVIDIA driver (R580 or newer)")]
    DriverTooOld { found: String, required: String },
    #[error("CUDA call {call} failed: {detail}")]
    Cuda { call: &'static str, detail: String },
    #[error("no GPU with ordinal {ordinal}: {count} visible")]
    NoSuchDevice { ordinal: usize, count: usize },
}

/// `13000` → `13.0`.
pub fn format_driver_version(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

fn cuda(call: &'static str) -> impl Fn(result::DriverError) -> DeviceError {
    move |e| DeviceError::Cuda {
        call,
        detail: format!("{e:?}"),
    }
}

/// The driver's CUDA version (e.g. 13000), after checking the library loads.
pub fn driver_version() -> Result<i32, DeviceError> {
    // SAFETY: only probes whether the shared library can be opened.
    if !unsafe { sys::is_culib_present() } {
        return Err(DeviceError::NoDriver);
    }
    let mut version = 0;
    // SAFETY: cuDriverGetVersion exists in every driver and writes one int.
    unsafe { sys::cuDriverGetVersion(&mut version) }
        .result()
        .map_err(cuda("cuDriverGetVersion"))?;
    Ok(version)
}

/// Refuses drivers older than the CUDA 13.0 API this build calls.
pub fn check_driver_version(version: i32) -> Result<(), DeviceError> {
    if version < REQUIRED_DRIVER_VERSION {
        return Err(DeviceError::DriverTooOld {
            found: format_driver_version(version),
            required: format_driver_version(REQUIRED_DRIVER_VERSION),
        });
    }
    Ok(())
}

/// Loads the driver, checks its version and initialises it.
pub fn init() -> Result<i32, DeviceError> {
    let version = driver_version()?;
    check_driver_version(version)?;
    match result::init() {
        Ok(()) => Ok(version),
        Err(e) if e.0 == sys::CUresult::CUDA_ERROR_NO_DEVICE => Err(DeviceError::NoGpu {
            detail: "the driver reports CUDA_ERROR_NO_DEVICE".to_string(),
        }),
        Err(e) => Err(cuda("cuInit")(e)),
    }
}

/// The number of visible GPUs; an error when there are none.
pub fn count() -> Result<usize, DeviceError> {
    init()?;
    let n = result::device::get_count().map_err(cuda("cuDeviceGetCount"))?;
    if n <= 0 {
        return Err(DeviceError::NoGpu {
            detail: "the driver sees 0 devices".to_string(),
        });
    }
    Ok(n as usize)
}

/// The identity of every visible GPU, in ordinal order.
pub fn list() -> Result<Vec<DeviceIdentity>, DeviceError> {
    (0..count()?).map(identity).collect()
}

/// The identity of the GPU with this ordinal.
pub fn identity(ordinal: usize) -> Result<DeviceIdentity, DeviceError> {
    let version = init()?;
    let count = count()?;
    if ordinal >= count {
        return Err(DeviceError::NoSuchDevice { ordinal, count });
    }
    let dev = result::device::get(ordinal as i32).map_err(cuda("cuDeviceGet"))?;
    use sys::CUdevice_attribute::*;
    let attr = |a: sys::CUdevice_attribute| -> Result<u64, DeviceError> {
        // SAFETY: `dev` came from cuDeviceGet.
        let v = unsafe { result::device::get_attribute(dev, a) }
            .map_err(cuda("cuDeviceGetAttribute"))?;
        Ok(v.max(0) as u64)
    };
    let uuid = result::device::get_uuid(dev).map_err(cuda("cuDeviceGetUuid"))?;
    let uuid_bytes: [u8; 16] = uuid.bytes.map(|b| b as u8);
    // SAFETY: `dev` came from cuDeviceGet.
    let total = unsafe { result::device::total_mem(dev) }.map_err(cuda("cuDeviceTotalMem"))?;
    Ok(DeviceIdentity {
        uuid: format_uuid(&uuid_bytes),
        name: result::device::get_name(dev).map_err(cuda("cuDeviceGetName"))?,
        compute_capability: ComputeCapability {
            major: attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? as u32,
            minor: attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)? as u32,
        },
        sm_count: attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
        l2_bytes: attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
        shared_memory_per_block_bytes: attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
        shared_memory_per_block_optin_bytes: attr(
            CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        )?,
        shared_memory_per_sm_bytes: attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?,
        global_memory_bytes: total as u64,
        sm_clock_khz: attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?,
        memory_clock_khz: attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)?,
        memory_bus_width_bits: attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)? as u32,
        driver_version: format_driver_version(version),
        pci_bus_id: pci_bus_id(dev),
    })
}

fn pci_bus_id(dev: sys::CUdevice) -> Option<String> {
    let mut buf = [0 as std::ffi::c_char; 32];
    // SAFETY: the buffer's length is passed; the driver writes a NUL-terminated string.
    unsafe { sys::cuDeviceGetPCIBusId(buf.as_mut_ptr(), buf.len() as i32, dev) }
        .result()
        .ok()?;
    // SAFETY: NUL-terminated by the driver within the buffer.
    let s = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
    Some(nvidia_smi_bus_id(&s.to_string_lossy()))
}

/// The driver prints a 4-digit PCI domain (`0000:19:00.0`), nvidia-smi an 8-digit one
/// (`00000000:19:00.0`); profiles use nvidia-smi's form so the two can be compared.
fn nvidia_smi_bus_id(driver: &str) -> String {
    match driver.split_once(':') {
        Some((domain, rest)) => format!("{domain:0>8}:{rest}"),
        None => driver.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_versions_print_like_nvidia_smi() {
        assert_eq!(format_driver_version(13000), "13.0");
        assert_eq!(format_driver_version(12090), "12.9");
        assert_eq!(format_driver_version(13010), "13.1");
    }

    #[test]
    fn drivers_older_than_cuda_13_are_refused_with_the_fix() {
        assert!(check_driver_version(13000).is_ok());
        assert!(check_driver_version(13020).is_ok());
        let err = check_driver_version(12080).unwrap_err();
        assert!(matches!(err, DeviceError::DriverTooOld { .. }));
        let msg = err.to_string();
        assert!(
            msg.contains("12.8")
                && msg.contains("13.0")
                && msg.contains("update the NVIDIA driver"),
            "{msg}"
        );
    }

    #[test]
    fn no_driver_here_is_an_error_not_a_panic() {
        // On a machine without libcuda (CI) this is NoDriver; with a driver, a version.
        match driver_version() {
            Ok(v) => assert!(v > 0),
            Err(e) => assert!(matches!(e, DeviceError::NoDriver), "{e}"),
        }
    }

    #[test]
    fn bus_ids_print_like_nvidia_smi() {
        assert_eq!(nvidia_smi_bus_id("0000:00:06.0"), "00000000:00:06.0");
        assert_eq!(nvidia_smi_bus_id("00000000:19:00.0"), "00000000:19:00.0");
    }
}
