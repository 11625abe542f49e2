"""What is in it:

* ``admission``: What the API server and the Chaos Mesh admission webhook check beyond the CRD schema
* ``cli``: ``chaosdb manifests list|render|validate``
* ``schema``: Offline structural validation of custom resources against their CRD ``openAPIV3Schema``
* ``templates``: Manifest templates (shipped in :mod:`chaosdb.shipped`, ``templates/``)
* ``validate``: ``chaosdb manifests validate``
"""
