"""The classroom's JupyterHub pieces, and the settings of every Jupyter server the kit starts.

``authenticator`` admits the students on the roster, ``spawner`` starts one
container per student with their own node credentials, and ``lab_server``
holds the server settings (kernel websockets without Nagle's delay) used by
the course command, the images and the hub alike. The hub uses the classroom
(rosters, credentials) and the nodes.
"""
