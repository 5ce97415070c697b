from echomq_teach import keyspace


def read_brands(s_conn, n_conn, queue):
    return {
        "scripted": s_conn.call("GET", keyspace.VERSION_KEY),
        "native": n_conn.call("GET", keyspace.VERSION_KEY),
    }
