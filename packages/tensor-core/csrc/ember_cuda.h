/* ember_core's CUDA backend: the runtime Python drives (devices, streams,
 * events, copies, loading the kernels it compiled with NVRTC) and the CUDA
 * launchers of the kernel interface.
 *
 * Note [Kernel interface per device]
 * Every kernel entry point of ember_core.h that has a CUDA implementation has a
 * twin here named ecu_* instead of ec_*, with the same parameters: the pointers
 * are device addresses, and the work is queued on the current stream of the
 * current device (set with ecu_set_device/ecu_set_stream) and not waited for.
 * Python picks the namespace by the tensors' device (ember_core/_kernels.py),
 * so an op's Python code is the same on every device.  A status is returned as
 * by the CPU kernels; errors that only the device sees (an index out of range)
 * are reported at the next synchronisation.
 *
 * Like ember_core.h, the text between the cdef markers is cffi's cdef. */
#ifndef EMBER_CUDA_H
#define EMBER_CUDA_H

#include "ember_core.h"

/* cdef:begin */

/* Kernel families: the unit the Python side compiles and loads at first use
 * (one module per family, op and dtype(s)).  Variants of a family's kernels:
 * contiguous, strided with 32-bit and with 64-bit index math. */
enum ecu_family {
    ECU_FAM_UNARY = 0,
    ECU_FAM_BINARY = 1,
    ECU_FAM_TERNARY = 2,
    ECU_FAM_CAST = 3,
    ECU_FAM_FILL = 4,
    ECU_NUM_FAMILIES = 5
};
enum ecu_variant { ECU_VAR_C = 0, ECU_VAR_S32 = 1, ECU_VAR_S64 = 2 };

/* --- runtime ------------------------------------------------------------ */

/* Load the driver (libcuda, by dlopen) and initialise it: EC_OK, or
 * EC_ERR_CUDA_UNAVAILABLE with the reason in ec_last_message(). */
int ecu_init(void);
int ecu_driver_version(int* version);
int ecu_device_count(int* count);
int ecu_set_device(int device);
int ecu_get_device(void);
int ecu_device_name(int device, char* name, int len);
int ecu_device_attribute(int device, int attribute, int* value);
int ecu_device_total_memory(int device, uint64_t* bytes);
int ecu_mem_get_info(int device, uint64_t* free_bytes, uint64_t* total_bytes);
/* Wait for all work on the device; reports device-side errors. */
int ecu_synchronize(int device);
/* Report (and clear) an error a kernel recorded on the current device. */
int ecu_check_errors(void);
/* Wait after every launch (EMBER_LAUNCH_BLOCKING=1). */
void ecu_set_launch_blocking(int on);

/* Streams and events are passed as integers; stream 0 is the default stream. */
int ecu_stream_create(int device, int priority, uint64_t* stream);
int ecu_stream_destroy(uint64_t stream);
int ecu_stream_synchronize(uint64_t stream);
int ecu_stream_query(uint64_t stream, int* done);
int ecu_stream_wait_event(uint64_t stream, uint64_t event);
int ecu_stream_priority_range(int* least, int* greatest);
void ecu_set_stream(int device, uint64_t stream);
uint64_t ecu_current_stream(int device);
int ecu_event_create(int timing, uint64_t* event);
int ecu_event_destroy(uint64_t event);
int ecu_event_record(uint64_t event, uint64_t stream);
int ecu_event_synchronize(uint64_t event);
int ecu_event_query(uint64_t event, int* done);
int ecu_event_elapsed(uint64_t start, uint64_t end, float* ms);

/* Copies between any two addresses (host or device) on the current stream;
 * blocking: wait for the copy (always the case from pageable host memory). */
int ecu_memcpy(ec_ptr dst, ec_ptr src, uint64_t nbytes, int blocking);
int ecu_memset(ec_ptr dst, int value, uint64_t nbytes);
/* The device a pointer belongs to, or -1 for host memory. */
int ecu_pointer_device(ec_ptr ptr, int* device);

/* Kernels: the Python side compiles a module and loads it on the current
 * device, then registers each kernel under its (family, op, dtypes, variant). */
int ecu_module_load(const void* image, uint64_t* module);
int ecu_register(int family, int op, int dtype, int dtype2, int variant, uint64_t module,
                 const char* name);

/* --- launchers (Note [Kernel interface per device]) ---------------------- */

int ecu_copy(int ndim, const int64_t* layout, ec_ptr dst, int dst_dtype, ec_ptr src,
             int src_dtype);
int ecu_copy_contig(int64_t n, ec_ptr dst, int dst_dtype, ec_ptr src, int src_dtype);
int ecu_fill(int ndim, const int64_t* layout, ec_ptr dst, int dtype, double value,
             int64_t ivalue);
int ecu_unary(int op, int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr x,
              double p0, double p1);
int ecu_unary_contig(int op, int dtype, int64_t n, ec_ptr out, ec_ptr x, double p0, double p1);
int ecu_binary(int op, int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr a,
               ec_ptr b, double p0);
int ecu_binary_contig(int op, int dtype, int64_t n, ec_ptr out, ec_ptr a, ec_ptr b, double p0);
int ecu_binary_scalar(int op, int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr a,
                      double s, int64_t si, int scalar_first, double p0);
int ecu_binary_scalar_contig(int op, int dtype, int64_t n, ec_ptr out, ec_ptr a, double s,
                             int64_t si, int scalar_first, double p0);
int ecu_ternary(int op, int dtype, int ndim, const int64_t* layout, ec_ptr out, ec_ptr a,
                ec_ptr b, ec_ptr c, double p0);

/* cdef:end */

/* Implemented by the Python side (cffi extern "Python+C", ember_core/_cuda.py):
 * compile and register the kernel (family, op, dtype, dtype2, variant) on `device`. */
int ecu_py_compile(int device, int family, int op, int dtype, int dtype2, int variant);

#endif
