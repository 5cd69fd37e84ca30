/* Thread-local error state: C never raises, it returns a status and leaves the
 * details here for the Python side (_lib.py) to read. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ember_allocator.h"
#include "raw.h"
#include "internal.h"

static _Thread_local int tls_status;
static _Thread_local char tls_message[512];
static _Thread_local ea_oom_info tls_oom;

int ea_fail(int status, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tls_message, sizeof tls_message, fmt, ap);
    va_end(ap);
    tls_status = status;
    return status;
}

void ea_clear_error(void) {
    tls_status = EA_OK;
    tls_message[0] = '\0';
}

void ea_set_oom(const ea_oom_info* info) {
    tls_oom = *info;
    tls_status = EA_ERR_OOM;
    snprintf(tls_message, sizeof tls_message, "out of memory");
}

int ea_last_status(void) { return tls_status; }
const char* ea_last_message(void) { return tls_message; }
void ea_last_oom(ea_oom_info* out) { *out = tls_oom; }
