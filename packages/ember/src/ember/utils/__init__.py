"""ember.utils: ember.utils.data (from ember_data)."""
