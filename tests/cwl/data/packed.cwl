{
    "$graph": [
        {
            "class": "CommandLineTool",
            "doc": "Concatenate files in order.",
            "baseCommand": "cat",
            "inputs": [
                {
                    "type": {
                        "type": "array",
                        "items": "File"
                    },
                    "inputBinding": {
                        "position": 1
                    },
                    "id": "#concatenate.cwl/parts"
                }
            ],
            "stdout": "report.txt",
            "id": "#concatenate.cwl",
            "outputs": [
                {
                    "type": "File",
                    "id": "#concatenate.cwl/report",
                    "outputBinding": {
                        "glob": "report.txt"
                    }
                }
            ]
        },
        {
            "class": "CommandLineTool",
            "doc": "Count the occurrences of each line of a sorted file (`uniq -c`).",
            "baseCommand": [
                "uniq",
                "-c"
            ],
            "requirements": [
                {
                    "envDef": [
                        {
                            "envValue": "C",
                            "envName": "LC_ALL"
                        }
                    ],
                    "class": "EnvVarRequirement"
                }
            ],
            "inputs": [
                {
                    "type": "File",
                    "inputBinding": {
                        "position": 1
                    },
                    "id": "#count-words.cwl/sorted"
                }
            ],
            "stdout": "$(inputs.sorted.nameroot).counts.txt",
            "outputs": [
                {
                    "type": "File",
                    "id": "#count-words.cwl/counts",
                    "outputBinding": {
                        "glob": "$(inputs.sorted.nameroot).counts.txt"
                    }
                }
            ],
            "id": "#count-words.cwl"
        },
        {
            "class": "Workflow",
            "label": "word counts per sample",
            "doc": "For each sample (a scatter over `samples`) run the two-step subworkflow\n`sample-stats.cwl` (sort, then count), then concatenate the per-sample counts.\nThe inner steps are flattened to `per_sample/sort` and `per_sample/count`;\nthey run once per sample.\n",
            "requirements": [
                {
                    "class": "ScatterFeatureRequirement"
                },
                {
                    "class": "SubworkflowFeatureRequirement"
                }
            ],
            "inputs": [
                {
                    "type": {
                        "type": "array",
                        "items": "File"
                    },
                    "id": "#main/samples"
                }
            ],
            "outputs": [
                {
                    "type": "File",
                    "outputSource": "#main/gather/report",
                    "id": "#main/report"
                }
            ],
            "steps": [
                {
                    "run": "#concatenate.cwl",
                    "in": [
                        {
                            "source": "#main/per_sample/counts",
                            "id": "#main/gather/parts"
                        }
                    ],
                    "out": [
                        "#main/gather/report"
                    ],
                    "hints": [
                        {
                            "vcpus": 1,
                            "vram": 512,
                            "preempt": false,
                            "class": "https://w3id.org/plastic/cwl#Plasticity"
                        }
                    ],
                    "id": "#main/gather"
                },
                {
                    "run": "#sample-stats.cwl",
                    "scatter": "#main/per_sample/sample",
                    "in": [
                        {
                            "source": "#main/samples",
                            "id": "#main/per_sample/sample"
                        }
                    ],
                    "out": [
                        "#main/per_sample/counts"
                    ],
                    "id": "#main/per_sample"
                }
            ],
            "id": "#main"
        },
        {
            "class": "Workflow",
            "doc": "Sort one sample's words, then count each distinct word.",
            "hints": [
                {
                    "vram": 768,
                    "class": "https://w3id.org/plastic/cwl#Plasticity"
                }
            ],
            "inputs": [
                {
                    "type": "File",
                    "id": "#sample-stats.cwl/sample"
                }
            ],
            "outputs": [
                {
                    "type": "File",
                    "outputSource": "#sample-stats.cwl/count/counts",
                    "id": "#sample-stats.cwl/counts"
                }
            ],
            "steps": [
                {
                    "run": "#count-words.cwl",
                    "in": [
                        {
                            "source": "#sample-stats.cwl/sort/sorted",
                            "id": "#sample-stats.cwl/count/sorted"
                        }
                    ],
                    "out": [
                        "#sample-stats.cwl/count/counts"
                    ],
                    "hints": [
                        {
                            "vcpus": 1,
                            "preempt": 2,
                            "class": "https://w3id.org/plastic/cwl#Plasticity"
                        }
                    ],
                    "id": "#sample-stats.cwl/count"
                },
                {
                    "run": "#sort-words.cwl",
                    "in": [
                        {
                            "source": "#sample-stats.cwl/sample",
                            "id": "#sample-stats.cwl/sort/words"
                        }
                    ],
                    "out": [
                        "#sample-stats.cwl/sort/sorted"
                    ],
                    "hints": [
                        {
                            "vcpus": 1,
                            "vram": 1024,
                            "class": "https://w3id.org/plastic/cwl#Plasticity"
                        }
                    ],
                    "id": "#sample-stats.cwl/sort"
                }
            ],
            "id": "#sample-stats.cwl"
        },
        {
            "class": "CommandLineTool",
            "doc": "Sort lines in byte order.",
            "baseCommand": "sort",
            "requirements": [
                {
                    "envDef": [
                        {
                            "envValue": "C",
                            "envName": "LC_ALL"
                        }
                    ],
                    "class": "EnvVarRequirement"
                }
            ],
            "inputs": [
                {
                    "type": "File",
                    "inputBinding": {
                        "position": 1
                    },
                    "id": "#sort-words.cwl/words"
                }
            ],
            "stdout": "$(inputs.words.nameroot).sorted.txt",
            "outputs": [
                {
                    "type": "File",
                    "id": "#sort-words.cwl/sorted",
                    "outputBinding": {
                        "glob": "$(inputs.words.nameroot).sorted.txt"
                    }
                }
            ],
            "id": "#sort-words.cwl"
        }
    ],
    "cwlVersion": "v1.2",
    "$namespaces": {
        "plastic": "https://w3id.org/plastic/cwl#"
    }
}
