/* mpi_load — dlopen of Open MPI's libmpi for runs under a launcher (see mpi_load.h). RTLD_GLOBAL:
 * Open MPI loads its own components (transports, PMIx) with dlopen, and they resolve libmpi's
 * symbols through the global scope. */
#include "dist/mpi_load.h"
#include <dlfcn.h>
#include <stdio.h>

static mpi_api api;
static int loaded;

#define NEED(field, name) do { *(void **)&api.field = dlsym(h, name); \
    if (!api.field) { snprintf(err, errlen, "Open MPI's libmpi lacks %s: dsperf needs Open MPI 3 or newer", name); return NULL; } } while (0)

const mpi_api *mpi_api_load(char *err, size_t errlen) {
    if (loaded) return &api;
    static const char *const names[] = { "libmpi.so.40", "libmpi.so", NULL };
    void *h = NULL;
    for (const char *const *n = names; *n && !h; n++) h = dlopen(*n, RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        snprintf(err, errlen, "this run was started by an MPI launcher but Open MPI's libmpi.so.40 cannot be loaded "
                 "(%s): install it (apt-get install openmpi-bin libopenmpi3)", dlerror());
        return NULL;
    }
    NEED(init_thread, "MPI_Init_thread");
    NEED(finalize, "MPI_Finalize");
    NEED(abort, "MPI_Abort");
    NEED(comm_set_errhandler, "MPI_Comm_set_errhandler");
    NEED(comm_rank, "MPI_Comm_rank");
    NEED(comm_size, "MPI_Comm_size");
    NEED(isend, "MPI_Isend");
    NEED(irecv, "MPI_Irecv");
    NEED(test, "MPI_Test");
    NEED(iprobe, "MPI_Iprobe");
    NEED(get_count, "MPI_Get_count");
    NEED(request_free, "MPI_Request_free");
    /* Open MPI's predefined handles are the addresses of these globals */
    NEED(comm_world, "ompi_mpi_comm_world");
    NEED(byte, "ompi_mpi_byte");
    NEED(errors_return, "ompi_mpi_errors_return");
    loaded = 1;
    return &api;
}
