/* ember_autograd's C extension: the hot paths of recording and of the backward
 * engine, as CPython objects (Note [C extension] in autograd.c).
 *
 * This header is the cffi cdef (between the markers): the one C function cffi
 * exposes installs the module's Python-level types and functions.
 */
#ifndef EMBER_AUTOGRAD_H
#define EMBER_AUTOGRAD_H

/* cdef:begin */

/* Adds the extension's types and functions to the module ember_autograd._C
 * (already imported).  0 on success, -1 with the reason in ea_last_message(). */
int ea_install(void);
const char* ea_last_message(void);

/* cdef:end */

#endif
