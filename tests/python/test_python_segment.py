# SPDX-License-Identifier: MIT
"""strata.Segment from Python: vectors as zero-copy numpy arrays, handles, errors."""

import pickle

import numpy as np
import pytest


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "uint8"])
def test_a_vector_of_every_dtype_is_a_numpy_view_of_the_segment(strata_module, segment_name, dtype):
    strata = strata_module
    with strata.Segment(segment_name, "create_only", 16 << 20) as seg:
        a = seg.vector("v", dtype, 1000)
        assert a.dtype == np.dtype(dtype) and a.shape == (1000,)
        assert not a.any()
        a[:] = np.arange(1000) % 100
        b = seg.find("v", dtype)
        assert b.__array_interface__["data"][0] == a.__array_interface__["data"][0]
        b[7] = 42
        assert a[7] == 42
        c = seg.load(seg.save(a))
        assert np.array_equal(c, a)
        del a, b, c


def test_vector_finds_an_existing_vector_instead_of_creating_one(strata_module, segment_name):
    with strata_module.Segment(segment_name, "create_only", 16 << 20) as seg:
        a = seg.vector("v", np.int64, 10)
        a[0] = 5
        b = seg.vector("v", np.int64, 10)
        assert b[0] == 5
        del a, b


def test_handles_pickle_and_load_in_a_second_attachment(strata_module, segment_name):
    strata = strata_module
    with strata.Segment(segment_name, "create_only", 16 << 20) as seg:
        a = seg.vector("v", np.float32, 100)
        a[:] = 2.5
        h = pickle.loads(pickle.dumps(seg.save(a)))
        assert isinstance(h, strata.Handle) and not h.is_null()
        with strata.Segment(segment_name, "open_only") as other:
            b = other.load(h)
            assert np.all(b == 2.5)
            assert b.__array_interface__["data"][0] != a.__array_interface__["data"][0]  # another mapping
            b[0] = -1
            assert a[0] == -1  # same pages
            del b
        del a


def test_bad_inputs_raise_naming_the_parameter(strata_module, segment_name):
    strata = strata_module
    with pytest.raises(ValueError, match="mode=sideways"):
        strata.Segment(segment_name, "sideways", 1 << 20)
    with pytest.raises(strata.Error, match=segment_name) as e:
        strata.Segment(segment_name, "open_only")
    assert e.value.code == "not_found"
    with strata.Segment(segment_name, "create_only", 16 << 20) as seg:
        with pytest.raises(ValueError, match="dtype=complex128"):
            seg.vector("v", np.complex128, 4)
        a = seg.vector("v", np.float64, 4)
        with pytest.raises(ValueError, match="is a .*double.*not a .*int"):
            seg.find("v", np.int32)
        with pytest.raises(strata.Error) as e:
            seg.find("missing", np.int32)
        assert e.value.code == "not_found"
        with pytest.raises(ValueError, match="not a whole vector"):
            seg.save(np.zeros(4))
        with pytest.raises(ValueError, match="not a whole vector"):
            seg.save(a[1:])
        with pytest.raises(strata.Error) as e:
            seg.vector("huge", np.uint8, 1 << 30)
        assert e.value.code == "no_space"
        with pytest.raises(strata.Error) as e:
            seg.close()
        assert e.value.code == "busy"
        h = seg.save(a)
        del a
        seg.erase("v", np.float64)
        with pytest.raises(Exception, match="generation|freed|stale"):
            seg.load(h)


def test_a_handle_of_another_segment_does_not_load(strata_module, segment_name):
    strata = strata_module
    with strata.Segment(segment_name, "create_only", 16 << 20) as one:
        with strata.Segment(segment_name + "-b", "create_only", 16 << 20) as two:
            a = one.vector("v", np.int32, 3)
            h = one.save(a)
            with pytest.raises(Exception, match="segment"):
                two.load(h)
            del a
