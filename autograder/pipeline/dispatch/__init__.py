"""Handing submissions to workers: a local pool of processes, or a Dask cluster's workers."""
