"""FL Privacy Lab: the Streamlit router. Pages live in pages/; the engine in fedcore/."""
import streamlit as st

st.set_page_config(page_title="FL Privacy Lab", layout="wide")
st.title("FL Privacy Lab")
st.write("Federated learning under differential privacy. The dashboard pages are being built.")
