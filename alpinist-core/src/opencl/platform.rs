//! Listing OpenCL platforms and devices without panicking.
//!
//! `ocl`'s `Platform::default()` and `Platform::list()` panic when the ICD loader finds no
//! platform, and `ocl::core::get_platform_ids` waits 10 s first; this module asks the loader once
//! (`clGetPlatformIDs`), then `get_platform_ids`, and turns "none" into
//! [`PlatformError::NoPlatform`].

use ocl::{Device, Platform};

use super::OpenClError;

/// One device of one platform, with what the harness needs to launch on it.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    pub platform: Platform,
    pub device: Device,
    pub platform_name: String,
    pub device_name: String,
    /// The largest work-group the device accepts (`CL_DEVICE_MAX_WORK_GROUP_SIZE`).
    pub max_work_group_size: usize,
    /// Bytes of local memory per work-group (`CL_DEVICE_LOCAL_MEM_SIZE`).
    pub local_mem_bytes: u64,
    /// The device is a CPU (`CL_DEVICE_TYPE_CPU`): the throughput benchmark picks its launch
    /// shape by it.
    pub cpu: bool,
}

impl DeviceInfo {
    /// A new context of this device alone and an in-order queue on it: where buffers for
    /// a kernel's `OnDevice` launcher are made (`ocl::Buffer::builder().queue(..)`).
    pub fn queue(&self) -> Result<ocl::Queue, OpenClError> {
        let context = ocl::Context::builder()
            .platform(self.platform)
            .devices(self.device)
            .build()?;
        Ok(ocl::Queue::new(&context, self.device, None)?)
    }
}

/// Why no device could be listed or selected.
#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    #[error(
        "no OpenCL platform found (the ICD loader reported: {0}); install one, e.g. Debian's \
         `pocl-opencl-icd`"
    )]
    NoPlatform(String),
    #[error("no OpenCL platform is named `{wanted}` (found: {found})")]
    NoSuchPlatform { wanted: String, found: String },
    #[error("the selected OpenCL platforms have no device")]
    NoDevice,
    #[error(transparent)]
    OpenCl(#[from] OpenClError),
}

/// One listing at a time: pocl sets itself up on the first call, and a second thread listing
/// meanwhile was told its platform had no device (two tests of one binary, seen in CI).
static LISTING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Every platform with its devices, in the loader's order.
pub fn list() -> Result<Vec<DeviceInfo>, PlatformError> {
    let _one_at_a_time = LISTING.lock().unwrap_or_else(|e| e.into_inner());
    // ocl-core's get_platform_ids retries for 10 s when the loader finds no platform (a guard
    // against a multi-threaded ICD wake-up race): ask the loader once first.
    let mut count: u32 = 0;
    // SAFETY: clGetPlatformIDs with num_entries 0 and a null platform array only writes the
    // platform count through the valid pointer we pass.
    let status = unsafe { ocl::core::ffi::clGetPlatformIDs(0, std::ptr::null_mut(), &mut count) };
    if status != 0 || count == 0 {
        return Err(PlatformError::NoPlatform(format!(
            "clGetPlatformIDs returned status {status} and {count} platforms"
        )));
    }
    let ids =
        ocl::core::get_platform_ids().map_err(|e| PlatformError::NoPlatform(e.to_string()))?;
    if ids.is_empty() {
        return Err(PlatformError::NoPlatform("zero platforms".into()));
    }
    let mut out = Vec::new();
    for id in ids {
        let platform = Platform::new(id);
        let platform_name = platform.name().map_err(OpenClError::from)?;
        // A platform without devices lists as an error in some loaders: treat it as empty.
        let devices = Device::list_all(platform).unwrap_or_default();
        for device in devices {
            out.push(describe(platform, device, &platform_name)?);
        }
    }
    Ok(out)
}

/// The device's local memory per work-group, in bytes (0 where it does not say).
pub(super) fn local_mem_bytes(device: &Device) -> Result<u64, ocl::Error> {
    Ok(match device.info(ocl::enums::DeviceInfo::LocalMemSize)? {
        ocl::enums::DeviceInfoResult::LocalMemSize(bytes) => bytes,
        _ => 0,
    })
}

fn describe(
    platform: Platform,
    device: Device,
    platform_name: &str,
) -> Result<DeviceInfo, OpenClError> {
    let max_work_group_size = device.max_wg_size()?;
    let local_mem_bytes = local_mem_bytes(&device)?;
    let cpu = match device.info(ocl::enums::DeviceInfo::Type)? {
        ocl::enums::DeviceInfoResult::Type(kind) => kind.contains(ocl::flags::DeviceType::CPU),
        _ => false,
    };
    Ok(DeviceInfo {
        cpu,
        platform,
        device,
        platform_name: platform_name.to_string(),
        device_name: device.name()?,
        max_work_group_size,
        local_mem_bytes,
    })
}

/// The devices of the platforms `selector` names: `None` → the first platform that has a
/// device, `Some("all")` → every platform, `Some(name)` → platforms whose name contains `name`
/// (case-insensitive).
pub fn select(selector: Option<&str>) -> Result<Vec<DeviceInfo>, PlatformError> {
    let all = list()?;
    if all.is_empty() {
        return Err(PlatformError::NoDevice);
    }
    let chosen: Vec<DeviceInfo> = match selector {
        None => {
            let first = all[0].platform_name.clone();
            all.into_iter()
                .filter(|d| d.platform_name == first)
                .collect()
        }
        Some("all") => all,
        Some(wanted) => {
            let lower = wanted.to_lowercase();
            let names: Vec<String> = all.iter().map(|d| d.platform_name.clone()).collect();
            let chosen: Vec<DeviceInfo> = all
                .into_iter()
                .filter(|d| d.platform_name.to_lowercase().contains(&lower))
                .collect();
            if chosen.is_empty() {
                let mut names = names;
                names.dedup();
                return Err(PlatformError::NoSuchPlatform {
                    wanted: wanted.to_string(),
                    found: names.join(", "),
                });
            }
            chosen
        }
    };
    Ok(chosen)
}
