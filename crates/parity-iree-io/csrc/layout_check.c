// Compile-time checks that the structs src/ffi.rs declares by hand have the
// layout the IREE headers give them on this target. A mismatch fails the
// build here instead of reading the wrong bytes at run time.
#include <stddef.h>

#include "iree/io/parameter_index.h"

_Static_assert(offsetof(iree_io_parameter_index_entry_t, key) == 0, "key");
_Static_assert(offsetof(iree_io_parameter_index_entry_t, metadata) ==
                   sizeof(iree_string_view_t),
               "metadata");
_Static_assert(offsetof(iree_io_parameter_index_entry_t, length) ==
                   sizeof(iree_string_view_t) + sizeof(iree_const_byte_span_t),
               "length");
_Static_assert(offsetof(iree_io_parameter_index_entry_t, type) ==
                   offsetof(iree_io_parameter_index_entry_t, length) + 8,
               "type");
_Static_assert(sizeof(iree_io_parameter_index_entry_storage_type_t) == 4,
               "storage type is a 4-byte enum");
_Static_assert(offsetof(iree_io_parameter_index_entry_t, storage) ==
                   offsetof(iree_io_parameter_index_entry_t, type) + 8,
               "storage");
_Static_assert(offsetof(iree_io_parameter_index_entry_t, storage.file.handle) ==
                   offsetof(iree_io_parameter_index_entry_t, storage),
               "file handle");
_Static_assert(IREE_IO_PARAMETER_INDEX_ENTRY_STORAGE_TYPE_FILE == 1,
               "file storage type");

// An object file must not be empty (-Wempty-translation-unit).
int parity_iree_io_layout_checked(void) { return 1; }
