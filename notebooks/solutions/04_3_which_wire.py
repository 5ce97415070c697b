from echomq_teach import keyspace


def which_wire(s_conn, n_conn, queue, nodes):
    answers = []
    for node in nodes:
        raw = node.client()
        brand = raw.get(keyspace.VERSION_KEY)
        module = any(m["name"] == "trafikey" for m in raw.execute_command("MODULE", "LIST"))
        if brand is None or brand == keyspace.BRAND_WIRE4:
            # a wire 4 connector brands a node that has none, and never asks about the module
            answers.append("wire 4")
        elif brand == keyspace.BRAND_WIRE6 and module:
            answers.append("wire 6")
        else:
            answers.append("neither")  # a wire 6 brand with no module, or another program's brand
    return answers
