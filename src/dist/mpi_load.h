/* mpi_load — Open MPI, loaded at run time. dsperf needs libmpi only when a launcher (mpirun, srun
 * --mpi=pmix) started it: every other run, `dsperf --version` included, starts without Open MPI
 * installed and without paying for its loading. mpi.h is read at build time for its types; the
 * functions and the predefined handles (MPI_COMM_WORLD, MPI_BYTE, MPI_ERRORS_RETURN, which Open MPI
 * defines as addresses of its own globals) come from dlopen/dlsym of libmpi.so.40. */
#ifndef DSP_MPI_LOAD_H
#define DSP_MPI_LOAD_H
#include <mpi.h>
#include <stddef.h>

typedef struct {
    int (*init_thread)(int *, char ***, int, int *);
    int (*finalize)(void);
    int (*abort)(MPI_Comm, int);
    int (*comm_set_errhandler)(MPI_Comm, MPI_Errhandler);
    int (*comm_rank)(MPI_Comm, int *);
    int (*comm_size)(MPI_Comm, int *);
    int (*isend)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
    int (*irecv)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
    int (*test)(MPI_Request *, int *, MPI_Status *);
    int (*iprobe)(int, int, MPI_Comm, int *, MPI_Status *);
    int (*get_count)(const MPI_Status *, MPI_Datatype, int *);
    int (*request_free)(MPI_Request *);
    MPI_Comm comm_world;
    MPI_Datatype byte;
    MPI_Errhandler errors_return;
} mpi_api;

/* Loads libmpi (once; later calls return the same table). NULL when it cannot, with one line in
 * err saying what is missing and how to install it. */
const mpi_api *mpi_api_load(char *err, size_t errlen);
#endif
